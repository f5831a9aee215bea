package vend

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	"github.com/countersign/countersign/auth"
	"github.com/countersign/countersign/catalog"
)

// Authenticator establishes the caller from an Authorization header
// (*auth.Authenticator), as the sign routes do.
type Authenticator interface {
	Authenticate(ctx context.Context, authorization []byte, peerCerts []*x509.Certificate) (*auth.Identity, error)
}

// CatalogVendor is the catalog front's Vendor (catalog.Vendor): a
// loadTable answer asked for vended credentials gets them for the table's
// location as the catalog gives it, decided, minted and recorded like the
// credentials route's. A mint the policy refuses is catalog.ErrNotVendable:
// the front then answers with remote signing instead.
type CatalogVendor struct {
	Service       *Service
	Authenticator Authenticator
	// Region and Endpoint go into the credentials' config (client.region,
	// s3.endpoint) when set.
	Region, Endpoint string
}

// VendTable implements catalog.Vendor.
func (v *CatalogVendor) VendTable(ctx context.Context, r catalog.VendRequest) ([]catalog.StorageCredential, error) {
	id, err := v.Authenticator.Authenticate(ctx, r.Authorization, nil)
	if err != nil {
		return nil, fmt.Errorf("vend: authenticating the catalog's caller: %w", err)
	}
	t := r.Table
	req := &Request{Identity: id, Table: &t, Location: r.Location}
	if r.ReadOnly {
		req.Access = Read
	}
	c, err := v.Service.Mint(ctx, req)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Status != http.StatusServiceUnavailable && e.Status != http.StatusInternalServerError {
			return nil, fmt.Errorf("%w: %s", catalog.ErrNotVendable, e.Msg)
		}
		return nil, err
	}
	return []catalog.StorageCredential{{Prefix: c.Location, Config: IcebergConfig(c, v.Region, v.Endpoint)}}, nil
}
