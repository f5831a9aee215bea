package fastpath

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// The per-object fields of the input: unknown to partial evaluation, read
// from the object at each decision. Everything else is the scope, which
// partial evaluation sees.
var unknownFields = []string{
	"input.resource.key",
	"input.resource.arn",
	"input.resource.prefix",
	"input.resource.version_id",
	"input.request.headers",
	"input.source",
}

// knownInput is a scope's input as OPA sees it (the JSON round trip of the
// Input struct, exactly as rego.EvalInput converts it), with the per-object
// fields left out.
type knownInput struct {
	root     ast.Object // resource without key/arn/prefix, request without headers, no source
	rootKVs  [][2]*ast.Term
	resKVs   [][2]*ast.Term
	reqKVs   [][2]*ast.Term
	resource ast.Object
	request  ast.Object
	// The same fields by name, for the lazy objects' lookups.
	rootMap, resMap, reqMap map[string]ast.Value
}

func kvMap(kvs [][2]*ast.Term) map[string]ast.Value {
	m := make(map[string]ast.Value, len(kvs))
	for _, kv := range kvs {
		if s, ok := kv[0].Value.(ast.String); ok {
			m[string(s)] = kv[1].Value
		}
	}
	return m
}

var (
	keyResource = ast.StringTerm("resource")
	keyRequest  = ast.StringTerm("request")
	keySource   = ast.StringTerm("source")
	keyIP       = ast.StringTerm("ip")
	keyKey      = ast.StringTerm("key")
	keyARN      = ast.StringTerm("arn")
	keyPrefix   = ast.StringTerm("prefix")
	keyVersion  = ast.StringTerm("version_id")
	keyHeaders  = ast.StringTerm("headers")
)

// newKnownInput converts in the way the full evaluation does and removes
// the per-object fields.
func newKnownInput(in *policyinput.Input) (*knownInput, error) {
	cp := *in
	cp.Resource.Key, cp.Resource.ARN, cp.Resource.Prefix, cp.Resource.VersionID = "", "", nil, ""
	cp.Request.Headers = nil
	cp.Source = policyinput.Source{}
	var x any = &cp
	if err := util.RoundTripFast(&x); err != nil {
		return nil, err
	}
	v, err := ast.InterfaceToValue(x)
	if err != nil {
		return nil, err
	}
	full, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("policy: input is a %T", v)
	}
	k := &knownInput{}
	var resOld, reqOld ast.Object
	full.Foreach(func(key, val *ast.Term) {
		switch {
		case key.Equal(keyResource):
			resOld, _ = val.Value.(ast.Object)
		case key.Equal(keyRequest):
			reqOld, _ = val.Value.(ast.Object)
		case key.Equal(keySource):
		default:
			k.rootKVs = append(k.rootKVs, [2]*ast.Term{key, val})
		}
	})
	if resOld == nil || reqOld == nil {
		return nil, fmt.Errorf("policy: input without resource or request")
	}
	resOld.Foreach(func(key, val *ast.Term) {
		if !key.Equal(keyKey) && !key.Equal(keyARN) && !key.Equal(keyPrefix) && !key.Equal(keyVersion) {
			k.resKVs = append(k.resKVs, [2]*ast.Term{key, val})
		}
	})
	reqOld.Foreach(func(key, val *ast.Term) {
		if !key.Equal(keyHeaders) {
			k.reqKVs = append(k.reqKVs, [2]*ast.Term{key, val})
		}
	})
	k.resource = ast.NewObject(k.resKVs...)
	k.request = ast.NewObject(k.reqKVs...)
	kvs := append(slices.Clone(k.rootKVs), [2]*ast.Term{keyResource, ast.NewTerm(k.resource)}, [2]*ast.Term{keyRequest, ast.NewTerm(k.request)})
	k.root = ast.NewObject(kvs...)
	k.rootMap, k.resMap, k.reqMap = kvMap(k.rootKVs), kvMap(k.resKVs), kvMap(k.reqKVs)
	return k, nil
}

type lazyKind uint8

const (
	lzRoot lazyKind = iota
	lzResource
	lzRequest
	lzHeaders
	lzSource
	nLazy
)

// objInput is one object's input during a fast-path decision: the scope's
// known part plus this object's fields. The objects that contain the
// per-object fields (input, input.resource, input.request and its headers)
// are lazy: a reference into them reads the field, and only a use of the
// whole object (a built-in's argument, a comparison) builds it.
type objInput struct {
	k        *knownInput
	key, arn lazyStr
	version  lazyStr
	ip       lazyStr
	prefix   ast.Value // a string (boxed when needed) or null
	pstr     lazyStr
	headers  policyinput.Headers // in order (Normalized)

	lazy [nLazy]lazyVal
	mat  [nLazy]ast.Value

	// The headers as values, once iterated: names, and values as lazy
	// strings (policies rarely read them).
	hdrKeys, hdrVals []ast.Value
	hdrStrs          []lazyStr
	hdrDone          bool
	// valuesRead: the decision used some header's value (not only its
	// name). A decision that did not depends on the object's key, ARN,
	// prefix, source and header names only, and is remembered by those
	// (scope.memo).
	valuesRead bool
}

// headerValues are the header names and values as AST values, built once
// per decision however many rules iterate over them.
func (o *objInput) headerValues() ([]ast.Value, []ast.Value) {
	if !o.hdrDone {
		o.hdrDone = true
		o.hdrKeys, o.hdrVals, o.hdrStrs = o.hdrKeys[:0], o.hdrVals[:0], o.hdrStrs[:0]
		for _, h := range o.headers {
			o.hdrKeys = append(o.hdrKeys, ast.String(h.Name))
			o.hdrStrs = append(o.hdrStrs, lazyStr{s: h.Value, read: &o.valuesRead})
		}
		for i := range o.hdrStrs {
			o.hdrVals = append(o.hdrVals, &o.hdrStrs[i])
		}
	}
	return o.hdrKeys, o.hdrVals
}

// lazyStr is a string value boxed only when used. Every use of its
// content goes through value().
type lazyStr struct {
	s    string
	val  ast.Value
	read *bool // if set, value() sets *read
}

func (l *lazyStr) value() ast.Value {
	if l.read != nil {
		// At every use, not only the first: a header rule's memo
		// (headermemo.go) watches the flag over one rule's evaluation.
		*l.read = true
	}
	if l.val == nil {
		l.val = ast.String(l.s)
	}
	return l.val
}

func (l *lazyStr) Compare(other ast.Value) int          { return l.value().Compare(materialize(other)) }
func (l *lazyStr) Find(path ast.Ref) (ast.Value, error) { return l.value().Find(path) }
func (l *lazyStr) Hash() int                            { return l.value().Hash() }
func (l *lazyStr) IsGround() bool                       { return true }
func (l *lazyStr) String() string                       { return l.value().String() }
func (l *lazyStr) StringLength() int                    { return l.value().StringLength() }

func (o *objInput) reset(k *knownInput, in *policyinput.Input) {
	o.k = k
	o.key = lazyStr{s: in.Resource.Key}
	o.arn = lazyStr{s: in.Resource.ARN}
	o.version = lazyStr{s: in.Resource.VersionID}
	o.ip = lazyStr{s: in.Source.IP}
	if in.Resource.Prefix != nil {
		o.pstr = lazyStr{s: *in.Resource.Prefix}
		o.prefix = &o.pstr
	} else {
		o.prefix = ast.NullValue
	}
	o.headers = in.Request.Headers.Normalized()
	o.valuesRead = false
	for i := range o.lazy {
		o.lazy[i] = lazyVal{in: o, kind: lazyKind(i)}
		o.mat[i] = nil
	}
}

func (o *objInput) clear() {
	ks, vs, ss := o.hdrKeys, o.hdrVals, o.hdrStrs
	clear(ks)
	clear(vs)
	clear(ss)
	*o = objInput{hdrKeys: ks[:0], hdrVals: vs[:0], hdrStrs: ss[:0]}
}

func (o *objInput) root() ast.Value { return &o.lazy[lzRoot] }

// lazyField names a per-object field that a compiled test reads
// directly, as lazyVal.lookup would return it.
type lazyField uint8

const (
	fieldNone lazyField = iota
	fieldKey
	fieldARN
	fieldPrefix
	fieldVersion
	fieldIP
)

// fieldOf is the field of an input path, or fieldNone.
func fieldOf(path []ast.Value) lazyField {
	if len(path) != 2 {
		return fieldNone
	}
	a, ok1 := path[0].(ast.String)
	b, ok2 := path[1].(ast.String)
	switch {
	case !ok1 || !ok2:
	case a == "resource" && b == "key":
		return fieldKey
	case a == "resource" && b == "arn":
		return fieldARN
	case a == "resource" && b == "prefix":
		return fieldPrefix
	case a == "resource" && b == "version_id":
		return fieldVersion
	case a == "source" && b == "ip":
		return fieldIP
	}
	return fieldNone
}

// field is f's value, as lazyVal.lookup returns it.
func (o *objInput) field(f lazyField) ast.Value {
	switch f {
	case fieldKey:
		return &o.key
	case fieldARN:
		return &o.arn
	case fieldPrefix:
		return o.prefix
	case fieldVersion:
		return &o.version
	default:
		return &o.ip
	}
}

// lazyVal stands for one of the objects holding per-object fields. It is an
// ast.Value so that it can be bound to a variable; every other use goes
// through materialize.
type lazyVal struct {
	in   *objInput
	kind lazyKind
}

func materialize(v ast.Value) ast.Value {
	switch l := v.(type) {
	case *lazyVal:
		return l.value()
	case *lazyStr:
		return l.value()
	}
	return v
}

func (l *lazyVal) value() ast.Value {
	o := l.in
	if l.kind == lzHeaders {
		o.valuesRead = true // at every use, as lazyStr.value
	}
	if v := o.mat[l.kind]; v != nil {
		return v
	}
	var v ast.Value
	switch l.kind {
	case lzHeaders:
		kvs := make([][2]*ast.Term, 0, len(o.headers))
		for _, h := range o.headers {
			kvs = append(kvs, [2]*ast.Term{ast.StringTerm(h.Name), ast.StringTerm(h.Value)})
		}
		v = ast.NewObject(kvs...)
	case lzResource:
		kvs := make([][2]*ast.Term, 0, len(o.k.resKVs)+4)
		kvs = append(kvs, o.k.resKVs...)
		kvs = append(kvs, [2]*ast.Term{keyKey, ast.NewTerm(o.key.value())}, [2]*ast.Term{keyARN, ast.NewTerm(o.arn.value())}, [2]*ast.Term{keyPrefix, ast.NewTerm(materialize(o.prefix))},
			[2]*ast.Term{keyVersion, ast.NewTerm(o.version.value())})
		v = ast.NewObject(kvs...)
	case lzSource:
		v = ast.NewObject([2]*ast.Term{keyIP, ast.NewTerm(o.ip.value())})
	case lzRequest:
		kvs := make([][2]*ast.Term, 0, len(o.k.reqKVs)+1)
		kvs = append(kvs, o.k.reqKVs...)
		kvs = append(kvs, [2]*ast.Term{keyHeaders, ast.NewTerm(o.headersValue())})
		v = ast.NewObject(kvs...)
	case lzRoot:
		kvs := make([][2]*ast.Term, 0, len(o.k.rootKVs)+3)
		kvs = append(kvs, o.k.rootKVs...)
		kvs = append(kvs, [2]*ast.Term{keyResource, ast.NewTerm(o.lazy[lzResource].value())}, [2]*ast.Term{keyRequest, ast.NewTerm(o.lazy[lzRequest].value())},
			[2]*ast.Term{keySource, ast.NewTerm(o.lazy[lzSource].value())})
		v = ast.NewObject(kvs...)
	}
	o.mat[l.kind] = v
	return v
}

func (o *objInput) headersValue() ast.Value {
	if o.headers == nil {
		return ast.NullValue // nil headers are JSON null
	}
	return o.lazy[lzHeaders].value()
}

func (l *lazyVal) lookup(k ast.Value) (ast.Value, bool) {
	o := l.in
	s, ok := materialize(k).(ast.String)
	if !ok {
		return nil, false // JSON objects have string keys only
	}
	switch l.kind {
	case lzRoot:
		switch s {
		case "resource":
			return &o.lazy[lzResource], true
		case "request":
			return &o.lazy[lzRequest], true
		case "source":
			return &o.lazy[lzSource], true
		}
		v, ok := o.k.rootMap[string(s)]
		return v, ok
	case lzResource:
		switch s {
		case "key":
			return &o.key, true
		case "arn":
			return &o.arn, true
		case "prefix":
			return o.prefix, true
		case "version_id":
			return &o.version, true
		}
		v, ok := o.k.resMap[string(s)]
		return v, ok
	case lzSource:
		if s == "ip" {
			return &o.ip, true
		}
		return nil, false
	case lzRequest:
		if s == "headers" {
			if o.headers == nil {
				return ast.NullValue, true
			}
			return &o.lazy[lzHeaders], true
		}
		v, ok := o.k.reqMap[string(s)]
		return v, ok
	default:
		v, ok := o.headers.Get(string(s))
		if !ok {
			return nil, false
		}
		o.valuesRead = true
		return ast.String(v), true
	}
}

// ast.Value, for a lazy value that is bound to a variable: every method
// works on the built object.
func (l *lazyVal) Compare(other ast.Value) int          { return l.value().Compare(materialize(other)) }
func (l *lazyVal) Find(path ast.Ref) (ast.Value, error) { return l.value().Find(path) }
func (l *lazyVal) Hash() int                            { return l.value().Hash() }
func (l *lazyVal) IsGround() bool                       { return true }
func (l *lazyVal) String() string                       { return l.value().String() }
func (l *lazyVal) StringLength() int                    { return l.value().StringLength() }

// validObjectFields reports whether the per-object fields but the headers
// (appendValidHeaderNames) are valid UTF-8:
// the full evaluation's JSON round trip would replace invalid bytes, and
// the fast path reads the fields as they are.
func validObjectFields(in *policyinput.Input) bool {
	if !utf8.ValidString(in.Resource.Key) || !utf8.ValidString(in.Resource.ARN) || !utf8.ValidString(in.Resource.VersionID) || !utf8.ValidString(in.Source.IP) {
		return false
	}
	return in.Resource.Prefix == nil || utf8.ValidString(*in.Resource.Prefix)
}

// appendObjectKey appends an exact encoding of the per-object fields a
// decision that read no header value depends on: the key, ARN, prefix,
// version, source and the header names (in order, and whether there are headers at
// all: nil headers are JSON null).
func appendObjectKey(b []byte, in *policyinput.Input) []byte {
	return appendHeaderNames(appendObjectFields(b, in), in)
}

// appendObjectFields is appendObjectKey without the header names.
func appendObjectFields(b []byte, in *policyinput.Input) []byte {
	b = policyinput.AppendKeyString(b, in.Resource.Key)
	b = policyinput.AppendKeyString(b, in.Resource.ARN)
	if p := in.Resource.Prefix; p == nil {
		b = append(b, 0)
	} else {
		b = policyinput.AppendKeyString(append(b, 1), *p)
	}
	b = policyinput.AppendKeyString(b, in.Resource.VersionID)
	return policyinput.AppendKeyString(b, in.Source.IP)
}

// appendHeaderNames appends the header names part of appendObjectKey: an
// exact encoding of which headers there are (names in order; nil headers are
// JSON null), all that a header rule that read no value depends on
// (headermemo.go).
func appendHeaderNames(b []byte, in *policyinput.Input) []byte {
	b, _ = appendValidHeaderNames(b, in)
	return b
}

// appendValidHeaderNames is appendHeaderNames, and whether the header
// names and values are valid UTF-8 (validObjectFields, for the headers: one
// pass over them).
func appendValidHeaderNames(b []byte, in *policyinput.Input) ([]byte, bool) {
	hs := in.Request.Headers.Normalized()
	if hs == nil {
		return append(b, 'n'), true
	}
	valid := true
	b = binary.AppendUvarint(append(b, 'h'), uint64(len(hs)))
	for _, h := range hs {
		b = policyinput.AppendKeyString(b, h.Name)
		valid = valid && utf8.ValidString(h.Name) && utf8.ValidString(h.Value)
	}
	return b, valid
}

// appendScopeKey appends an exact encoding of everything in the input that
// is not a per-object field: two inputs with the same encoding have the
// same known input, so they share a residual. ok is false if some value
// cannot be encoded.
//
// A mint's input (in.Mint set) is not encoded: mints are rare, each has
// its own prefix and duration, and they are always fully evaluated.
func appendScopeKey(b []byte, in *policyinput.Input) ([]byte, bool) {
	if in.Mint != nil {
		return b, false
	}
	b = binary.AppendVarint(b, int64(in.Version))
	if p := in.Principal; p != nil && p.Key != "" {
		// Encoded once, where the principal was made (policyinput.Principal.Key).
		b = append(b, p.Key...)
	} else {
		var ok bool
		if b, ok = policyinput.AppendPrincipalKey(b, p); !ok {
			return b, false
		}
	}
	b = policyinput.AppendKeyString(b, in.Operation)
	b = policyinput.AppendKeyString(b, in.Action)
	b = policyinput.AppendKeyString(b, in.Access)
	b = policyinput.AppendKeyString(b, in.Resource.Bucket)
	if c := in.CopySource; c == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = policyinput.AppendKeyString(b, c.Bucket)
		b = policyinput.AppendKeyString(b, c.Key)
		if c.Prefix == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = policyinput.AppendKeyString(b, *c.Prefix)
		}
		b = policyinput.AppendKeyString(b, c.ARN)
		b = policyinput.AppendKeyString(b, c.VersionID)
	}
	if t := in.Table; t == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = policyinput.AppendKeyString(b, t.Prefix)
		b = policyinput.AppendKeyStrings(b, t.Namespace)
		b = policyinput.AppendKeyString(b, t.Name)
		b = policyinput.AppendKeyString(b, t.Location)
	}
	b = policyinput.AppendKeyString(b, in.Request.Method)
	b = policyinput.AppendKeyString(b, in.Request.Region)
	b = policyinput.AppendKeyString(b, in.Request.Host)
	// Source is per-object (unknownFields): executors of one scan share
	// a scope.
	return b, true
}
