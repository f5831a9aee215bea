package fastpath

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/countersign/countersign/internal/policyinput"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// InputValue builds the AST of in directly, equal to what rego.EvalInput
// makes of it through a JSON round trip (TestInputValueExact), at a
// fraction of the cost. ok is false for an input it cannot convert that
// way (a string that is not valid UTF-8, which JSON would alter, or claims
// that do not marshal): the caller then lets rego convert it.
func InputValue(in *policyinput.Input) (v ast.Value, ok bool) {
	c := converter{ok: true}
	obj := ast.NewObject(
		c.kv("version", ast.Number(strconv.Itoa(in.Version))),
		c.kv("principal", c.principal(in.Principal)),
		c.kv("operation", c.str(in.Operation)),
		c.kv("action", c.str(in.Action)),
		c.kv("access", c.str(in.Access)),
		c.kv("resource", c.resource(&in.Resource)),
		c.kv("copy_source", c.resourcePtr(in.CopySource)),
		c.kv("table", c.table(in.Table)),
		c.kv("request", c.request(&in.Request)),
		c.kv("source", ast.NewObject(c.kv("ip", c.str(in.Source.IP)))),
		c.kv("mint", c.mint(in.Mint)),
	)
	return obj, c.ok
}

type converter struct{ ok bool }

func (c *converter) mint(m *policyinput.Mint) ast.Value {
	if m == nil {
		return ast.NullValue
	}
	return ast.NewObject(
		c.kv("prefix", c.str(m.Prefix)),
		c.kv("access", c.str(m.Access)),
		c.kv("duration_seconds", ast.Number(strconv.FormatInt(m.DurationSeconds, 10))),
	)
}

func (c *converter) kv(k string, v ast.Value) [2]*ast.Term {
	return [2]*ast.Term{ast.StringTerm(k), ast.NewTerm(v)}
}

func (c *converter) str(s string) ast.Value {
	if !utf8.ValidString(s) {
		c.ok = false
	}
	return ast.String(s)
}

func (c *converter) strs(ss []string) ast.Value {
	if ss == nil {
		return ast.NullValue
	}
	ts := make([]*ast.Term, len(ss))
	for i, s := range ss {
		ts[i] = ast.NewTerm(c.str(s))
	}
	return ast.NewArray(ts...)
}

func (c *converter) principal(p *policyinput.Principal) ast.Value {
	if p == nil {
		return ast.NullValue
	}
	var claims ast.Value = ast.NullValue
	if p.Claims != nil {
		// Claims are any JSON: the same round trip as rego's, on them only.
		b, err := json.Marshal(p.Claims)
		var x any
		if err == nil {
			err = util.UnmarshalJSON(b, &x)
		}
		if err == nil {
			claims, err = ast.InterfaceToValue(x)
		}
		if err != nil {
			c.ok = false
			claims = ast.NullValue
		}
	}
	return ast.NewObject(
		c.kv("id", c.str(p.ID)),
		c.kv("issuer", c.str(p.Issuer)),
		c.kv("groups", c.strs(p.Groups)),
		c.kv("claims", claims),
	)
}

func (c *converter) resource(r *policyinput.Resource) ast.Value {
	var prefix ast.Value = ast.NullValue
	if r.Prefix != nil {
		prefix = c.str(*r.Prefix)
	}
	return ast.NewObject(
		c.kv("bucket", c.str(r.Bucket)),
		c.kv("key", c.str(r.Key)),
		c.kv("prefix", prefix),
		c.kv("arn", c.str(r.ARN)),
		c.kv("version_id", c.str(r.VersionID)),
	)
}

func (c *converter) resourcePtr(r *policyinput.Resource) ast.Value {
	if r == nil {
		return ast.NullValue
	}
	return c.resource(r)
}

func (c *converter) table(t *policyinput.Table) ast.Value {
	if t == nil {
		return ast.NullValue
	}
	return ast.NewObject(
		c.kv("prefix", c.str(t.Prefix)),
		c.kv("namespace", c.strs(t.Namespace)),
		c.kv("name", c.str(t.Name)),
		c.kv("location", c.str(t.Location)),
	)
}

func (c *converter) request(r *policyinput.Request) ast.Value {
	var headers ast.Value = ast.NullValue
	if hs := r.Headers.Normalized(); hs != nil {
		kvs := make([][2]*ast.Term, 0, len(hs))
		for _, h := range hs {
			kvs = append(kvs, [2]*ast.Term{ast.NewTerm(c.str(h.Name)), ast.NewTerm(c.str(h.Value))})
		}
		headers = ast.NewObject(kvs...)
	}
	return ast.NewObject(
		c.kv("method", c.str(r.Method)),
		c.kv("region", c.str(r.Region)),
		c.kv("host", c.str(r.Host)),
		c.kv("headers", headers),
	)
}
