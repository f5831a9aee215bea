// Package conformance runs countersign with Iceberg clients nobody here
// wrote: iceberg-go's real table code, a Go copy of the Java
// S3V4RestSignerClient driving the aws-sdk-go-v2 S3 client, and Python's
// botocore with PyIceberg's S3V4RestSigner hook, all against versitygw.
//
// It is its own Go module so that iceberg-go and arrow stay out of the
// service's go.mod and out of the e2e module. The tests build the
// countersign binary from the parent module and run versitygw from the
// pinned tools module (or VERSITYGW=/path/to/versitygw).
package conformance
