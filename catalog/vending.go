package catalog

import (
	"context"
	"errors"

	"github.com/countersign/countersign/internal/policyinput"
)

// Vendor decides whether the caller may have vended credentials for a
// table and mints them (implemented by package vend). The front asks it
// only when the client asked for vended credentials
// (X-Iceberg-Access-Delegation: vended-credentials); on ErrNotVendable, or
// any other error, the answer has remote signing on and no credentials.
type Vendor interface {
	VendTable(ctx context.Context, r VendRequest) ([]StorageCredential, error)
}

// VendRequest is one table answer's question to the Vendor.
type VendRequest struct {
	// Authorization is the caller's Authorization header, as the catalog
	// accepted it (the Vendor authenticates it itself).
	Authorization []byte
	// Table is the table, with Location the catalog's own (metadata.location).
	Table policyinput.Table
	// Location is the table's location, as in Table.Location.
	Location string
	// ReadOnly is set when the route cannot write (none today: loadTable
	// answers are used for writes too).
	ReadOnly bool
}

// StorageCredential is one entry of a LoadTableResult's
// storage-credentials: credentials for the objects under Prefix.
type StorageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// ErrNotVendable is the Vendor's answer when the policy does not allow
// vending for the table (or the caller): the table is signed instead.
var ErrNotVendable = errors.New("catalog: the policy does not allow vending credentials for this table")
