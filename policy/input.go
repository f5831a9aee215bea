package policy

import "github.com/countersign/countersign/internal/policyinput"

// The input document and the decision are defined in internal/policyinput,
// which imports no OPA package, so that auth and server need not link the
// engine to build or read them. These aliases keep policy's API whole.

// InputVersion is the version of the input document (policyinput.InputVersion).
const InputVersion = policyinput.InputVersion

type (
	// Input is the document a policy sees as `input` (policyinput.Input).
	Input = policyinput.Input
	// Principal is the authenticated caller (policyinput.Principal).
	Principal = policyinput.Principal
	// Resource is the object or prefix accessed (policyinput.Resource).
	Resource = policyinput.Resource
	// Table is the Iceberg table of the per-table route (policyinput.Table).
	Table = policyinput.Table
	// Request is the S3 request being signed (policyinput.Request).
	Request = policyinput.Request
	// Headers are the request's headers in order (policyinput.Headers).
	Headers = policyinput.Headers
	// Header is one of them (policyinput.Header).
	Header = policyinput.Header
	// Source is where the sign request came from (policyinput.Source).
	Source = policyinput.Source
	// Mint describes a request for vended credentials (policyinput.Mint).
	Mint = policyinput.Mint
	// Decision is the policy's answer for one input (policyinput.Decision).
	Decision = policyinput.Decision
)

// HeadersOf returns m's headers in order (policyinput.HeadersOf).
func HeadersOf(m map[string]string) Headers { return policyinput.HeadersOf(m) }
