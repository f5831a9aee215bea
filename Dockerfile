# Static, non-root, minimal image.
#   docker build --build-arg VERSION=$(git describe --tags --always) -t countersign .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/countersign ./cmd/countersign

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/countersign /usr/local/bin/countersign
USER nonroot:nonroot
EXPOSE 8181
ENTRYPOINT ["/usr/local/bin/countersign"]
CMD ["serve", "-config", "/etc/countersign/countersign.yaml"]
