package sessionpolicy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/s3req"
)

// DefaultMaxBytes is STS AssumeRole's limit on the plaintext of its Policy
// parameter: 2,048 characters (the STS API reference; see the package
// documentation).
const DefaultMaxBytes = 2048

// Options configures Compile.
type Options struct {
	// MaxBytes is the longest document; DefaultMaxBytes when not positive.
	// Larger values are refused: STS would.
	MaxBytes int
	// Exact makes the document name exactly the scope's prefixes or fail
	// (ErrNotExact): a prefix IAM would read as a pattern is refused, not
	// cut, and a document over MaxBytes is refused, not coarsened. Vended
	// credentials are compiled so (a mint is exact or refused); a
	// per-principal signing session, whose every request countersign
	// still decides, may be wider.
	Exact bool
}

// ErrNotExact is Compile's error, with Options.Exact, for a scope whose
// session policy could only be wider than the scope.
var ErrNotExact = errors.New("sessionpolicy: no session policy names the scope exactly")

// Metachars are the characters IAM reads as a pattern in a resource ARN
// or a StringLike condition: the wildcards * and ?, and $ (a policy
// variable, ${...}). IAM's own escapes for them (${*}, ${?}, ${$}) are
// not honoured by every STS (SeaweedFS's IAM leaves them as written), so
// an exact document never holds them.
const Metachars = "*?$"

// ErrEmptyScope is Compile's error for a scope that grants nothing: there
// is no session to mint.
var ErrEmptyScope = errors.New("sessionpolicy: the scope grants nothing")

// ErrTooLarge is Compile's error when the document does not fit even with
// every statement's prefixes merged into one.
var ErrTooLarge = errors.New("sessionpolicy: session policy too large")

// arnPrefix is the ARN of S3 buckets and objects in the aws partition.
const arnPrefix = "arn:aws:s3:::"

// Compile turns the scope into a session policy document of at most
// o.MaxBytes (see the package documentation).
func Compile(s policy.Scope, o Options) (Document, error) {
	max := o.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if max > DefaultMaxBytes {
		return Document{}, fmt.Errorf("sessionpolicy: MaxBytes %d is over STS AssumeRole's limit of %d characters for a session policy", max, DefaultMaxBytes)
	}
	groups, err := group(s.Grants, o.Exact)
	if err != nil {
		return Document{}, err
	}
	if len(groups) == 0 {
		return Document{}, ErrEmptyScope
	}
	if size := docSize(groups); o.Exact && size > max {
		return Document{}, fmt.Errorf("%w: %d characters naming every prefix, over the limit of %d (STS AssumeRole accepts at most 2,048 characters of plaintext JSON in its Policy parameter), and merging prefixes would widen it", ErrNotExact, size, max)
	}
	merges, size, ok := coarsen(groups, max)
	if exact := docSize(groups); ok && exact != size {
		// Never seen (TestCoarsenedSizes): fail closed rather than send
		// STS a document of a size not checked.
		return Document{}, fmt.Errorf("sessionpolicy: internal error: coarsened document is %d characters, computed %d", exact, size)
	}
	if !ok {
		return Document{}, fmt.Errorf("%w: %d characters with every statement's prefixes merged into one (%d statements), over the limit of %d (STS AssumeRole accepts at most 2,048 characters of plaintext JSON in its Policy parameter); grant fewer distinct action sets or buckets", ErrTooLarge, size, len(groups), max)
	}
	d := Document{Coarsened: merges}
	for _, g := range groups {
		d.Statements = append(d.Statements, g.statement())
	}
	return d, nil
}

// stmtGroup is one statement in the making: a bucket, an action set, and
// the prefixes it applies to.
type stmtGroup struct {
	bucket   string
	actions  []string
	list     bool // s3:ListBucket: prefixes are s3:prefix conditions
	bucketOn bool // a bucket-level action without prefixes (GetBucketLocation)
	prefixes []string
}

func (g *stmtGroup) key() string {
	return fmt.Sprintf("%d\x00%s\x00%s", kindOrder(g), g.bucket, strings.Join(g.actions, ","))
}

func kindOrder(g *stmtGroup) int {
	switch {
	case g.list:
		return 1
	case g.bucketOn:
		return 2
	}
	return 0
}

func (g *stmtGroup) statement() Statement {
	st := Statement{Actions: g.actions}
	switch {
	case g.list:
		st.Resources = []string{arnPrefix + g.bucket}
		if !slices.Contains(g.prefixes, "") {
			for _, p := range g.prefixes {
				st.ListPrefixes = append(st.ListPrefixes, p+"*")
			}
		}
	case g.bucketOn:
		st.Resources = []string{arnPrefix + g.bucket}
	default:
		for _, p := range g.prefixes {
			st.Resources = append(st.Resources, arnPrefix+g.bucket+"/"+p+"*")
		}
	}
	return st
}

// group splits the grants into statements: per bucket, the object actions
// of each distinct action set with their prefixes, s3:ListBucket with its
// prefixes, s3:GetBucketLocation.
func group(grants []policy.ScopeGrant, exact bool) ([]*stmtGroup, error) {
	by := map[string]*stmtGroup{}
	add := func(g *stmtGroup, prefix string) {
		k := g.key()
		if x := by[k]; x != nil {
			g = x
		} else {
			by[k] = g
		}
		if !g.bucketOn {
			g.prefixes = append(g.prefixes, prefix)
		}
	}
	for _, gr := range grants {
		if gr.Bucket == "" || strings.ContainsAny(gr.Bucket, "/*?$\"") {
			return nil, fmt.Errorf("sessionpolicy: grant bucket %q is not a bucket name", gr.Bucket)
		}
		prefix := literal(gr.Prefix)
		if exact && prefix != gr.Prefix {
			c := gr.Prefix[len(prefix)]
			return nil, fmt.Errorf("%w: prefix %q contains %q, which IAM reads as a wildcard or a policy variable, and IAM's escape for it is not honoured by every STS", ErrNotExact, gr.Prefix, c)
		}
		var obj []string
		for _, a := range gr.Actions {
			switch {
			case a == "s3:ListBucket":
				add(&stmtGroup{bucket: gr.Bucket, actions: []string{a}, list: true}, prefix)
			case s3req.BucketAction(a):
				add(&stmtGroup{bucket: gr.Bucket, actions: []string{a}, bucketOn: true}, "")
			case strings.HasPrefix(a, "s3:") && !strings.ContainsAny(a, "*?"):
				obj = append(obj, a)
			default:
				return nil, fmt.Errorf("sessionpolicy: grant action %q is not an S3 action", a)
			}
		}
		if len(obj) > 0 {
			slices.Sort(obj)
			add(&stmtGroup{bucket: gr.Bucket, actions: slices.Compact(obj)}, prefix)
		}
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*stmtGroup, 0, len(keys))
	for _, k := range keys {
		g := by[k]
		g.prefixes = normalize(g.prefixes)
		out = append(out, g)
	}
	return out, nil
}

// literal is the longest prefix of p that IAM reads literally: "*" and "?"
// are wildcards and "$" starts a policy variable in resources and
// StringLike conditions, so p is cut before the first of them (a wider
// prefix, never a narrower one).
func literal(p string) string {
	if i := strings.IndexAny(p, Metachars); i >= 0 {
		return p[:i]
	}
	return p
}

// normalize sorts ps and drops the prefixes another one covers.
func normalize(ps []string) []string {
	slices.Sort(ps)
	out := ps[:0]
	for _, p := range ps {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return slices.Clip(out)
}

// lcp is the length of the longest common prefix of a and b, in whole
// UTF-8 characters.
func lcp(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	for n > 0 && n < len(a) && !isRuneStart(a[n]) {
		n--
	}
	return n
}

func isRuneStart(b byte) bool { return b&0xc0 != 0x80 }

// docSize is the length of the document the groups make, computed
// without building it.
func docSize(groups []*stmtGroup) int {
	const (
		head = len(`{"Version":"2012-10-17","Statement":[`) + len(`]}`)
		stmt = len(`{"Effect":"Allow","Action":`) + len(`,"Resource":`) + len(`}`)
		cond = len(`,"Condition":{"StringLike":{"s3:prefix":`) + len(`}}`)
	)
	n := head + max(len(groups)-1, 0)
	for _, g := range groups {
		st := g.statement()
		n += stmt + listLen(st.Actions) + listLen(st.Resources)
		if st.ListPrefixes != nil {
			n += cond + listLen(st.ListPrefixes)
		}
	}
	return n
}

func listLen(ss []string) int {
	n := 2 + max(len(ss)-1, 0)
	for _, s := range ss {
		n += encodedLen(s)
	}
	return n
}
