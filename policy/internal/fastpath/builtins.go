package fastpath

import (
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// fastBuiltins are the built-ins the fast path may call (at a residual's
// compilation, to fold constants, and per object), by name. Only pure
// functions of their operands are here: no clock, randomness, network,
// evaluation state (print, trace, metadata, runtime) or relation
// semantics. A residual calling anything else is unsupported and its scope
// is decided by full evaluations, so a built-in that a new OPA version
// adds, or whose implementation changes its nature, is never run by the
// fast path until someone has reviewed it and added it here (see the
// upgrade checklist in doc.go; TestBuiltinsReviewed fails on a built-in
// that is in neither list).
var fastBuiltins = setOf(
	// comparison, arithmetic, bits
	"equal", "neq", "gt", "gte", "lt", "lte",
	"plus", "minus", "mul", "div", "rem", "abs", "round", "ceil", "floor",
	"numbers.range", "numbers.range_step",
	"bits.and", "bits.or", "bits.xor", "bits.negate", "bits.lsh", "bits.rsh",
	// aggregates, arrays, sets, objects
	"count", "sum", "product", "max", "min", "sort",
	"array.concat", "array.slice", "array.reverse", "array.flatten",
	"and", "or", "intersection", "union",
	"internal.member_2", "internal.member_3",
	"object.get", "object.keys", "object.remove", "object.union", "object.union_n",
	"object.filter", "object.subset", "json.filter", "json.remove", "json.patch",
	// strings
	"concat", "contains", "endswith", "startswith", "format_int", "indexof", "indexof_n",
	"lower", "upper", "replace", "split", "sprintf", "substring",
	"trim", "trim_left", "trim_prefix", "trim_right", "trim_suffix", "trim_space",
	"strings.any_prefix_match", "strings.any_suffix_match", "strings.count",
	"strings.replace_n", "strings.reverse",
	"regex.match", "re_match", "regex.is_valid", "regex.split", "regex.find_n", "regex.replace",
	"glob.match", "glob.quote_meta",
	// types
	"is_array", "is_boolean", "is_null", "is_number", "is_object", "is_set", "is_string",
	"type_name", "to_number",
	// encodings, hashes
	"base64.encode", "base64.decode", "base64.is_valid", "base64url.encode", "base64url.decode",
	"base64url.encode_no_pad", "hex.encode", "hex.decode",
	"json.marshal", "json.unmarshal", "json.is_valid", "yaml.marshal", "yaml.unmarshal", "yaml.is_valid",
	"urlquery.encode", "urlquery.decode", "urlquery.encode_object", "urlquery.decode_object",
	"crypto.md5", "crypto.sha1", "crypto.sha256",
	"crypto.hmac.md5", "crypto.hmac.sha1", "crypto.hmac.sha256", "crypto.hmac.sha512", "crypto.hmac.equal",
	// networks, versions, units, times given as operands
	"net.cidr_contains", "net.cidr_intersects", "net.cidr_is_valid", "net.cidr_contains_matches",
	"semver.compare", "semver.is_valid", "units.parse", "units.parse_bytes",
	"time.parse_ns", "time.parse_rfc3339_ns", "time.parse_duration_ns", "time.date", "time.clock",
	"time.weekday", "time.add_date", "time.diff", "time.format",
)

// refusedBuiltins are the built-ins of this OPA version reviewed and left
// out of fastBuiltins, with why: the fast path never calls them.
var refusedBuiltins = setOf(
	// the interpreter implements unification and assignment itself
	"eq", "assign",
	// evaluation state, not operands
	"print", "internal.print", "trace", "opa.runtime", "rego.metadata.chain", "rego.metadata.rule",
	"internal.test_case", "internal.template_string", "rego.parse_module",
	// relation (several outputs, evaluated by topdown as a generator)
	"walk",
	// non-deterministic (a policy calling them has no fast path at all)
	"http.send", "rand.intn", "time.now_ns", "uuid.rfc4122", "net.lookup_ip_addr",
	"io.jwt.decode_verify", "io.jwt.encode_sign", "io.jwt.encode_sign_raw",
	"json.match_schema", "json.verify_schema",
	// certificates are verified against the clock; keys, signing and
	// schemas are not what an authorization residual needs
	"crypto.x509.parse_and_verify_certificates", "crypto.x509.parse_and_verify_certificates_with_options",
	"crypto.x509.parse_certificate_request", "crypto.x509.parse_certificates", "crypto.x509.parse_keypair",
	"crypto.x509.parse_rsa_private_key", "crypto.parse_private_keys", "providers.aws.sign_req",
	"io.jwt.decode", "io.jwt.verify_eddsa", "io.jwt.verify_es256", "io.jwt.verify_es384", "io.jwt.verify_es512",
	"io.jwt.verify_hs256", "io.jwt.verify_hs384", "io.jwt.verify_hs512", "io.jwt.verify_ps256",
	"io.jwt.verify_ps384", "io.jwt.verify_ps512", "io.jwt.verify_rs256", "io.jwt.verify_rs384", "io.jwt.verify_rs512",
	"graphql.is_valid", "graphql.parse", "graphql.parse_and_verify", "graphql.parse_query",
	"graphql.parse_schema", "graphql.schema_is_valid",
	// rarely used, or deprecated: not worth the review
	"cast_array", "cast_boolean", "cast_null", "cast_object", "cast_set", "cast_string",
	"all", "any", "set_diff", "net.cidr_expand", "net.cidr_merge", "net.cidr_overlap",
	"regex.find_all_string_submatch_n", "regex.globs_match", "regex.template_match",
	"strings.render_template", "strings.split_n", "json.marshal_with_options", "uri.is_valid", "uri.parse",
	"uuid.parse", "graph.reachable", "graph.reachable_paths",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// usableBuiltin reports whether the fast path may evaluate calls of name:
// on the allow-list, and still deterministic, a function (not a relation),
// implemented and declared in the OPA version compiled in.
func usableBuiltin(name string) (*ast.Builtin, topdown.BuiltinFunc, bool) {
	if !fastBuiltins[name] {
		return nil, nil, false
	}
	bi, ok := ast.BuiltinMap[name]
	if !ok || bi.Nondeterministic || bi.Relation || bi.Decl == nil || bi.Decl.Result() == nil {
		return nil, nil, false
	}
	f := topdown.GetBuiltin(name)
	if f == nil {
		return nil, nil, false
	}
	return bi, f, true
}
