package fastpath

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExportsOnlyWhatPolicyUses: every identifier this package exports
// (top-level, and the methods and fields of its exported types) is used by
// package policy, its only importer; the rest of the fast path is internal.
func TestExportsOnlyWhatPolicyUses(t *testing.T) {
	fset := token.NewFileSet()
	parse := func(glob string) []*ast.File {
		t.Helper()
		names, err := filepath.Glob(glob)
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: %v", glob, err)
		}
		var files []*ast.File
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, n, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		return files
	}
	// What policy names: fastpath.X, and .Y on anything (methods, fields).
	qualified, selected := map[string]bool{}, map[string]bool{}
	for _, f := range parse("../../*.go") {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "fastpath" {
					qualified[n.Sel.Name] = true
				}
				selected[n.Sel.Name] = true
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok {
					selected[k.Name] = true
				}
			}
			return true
		})
	}
	var unused []string
	for _, f := range parse("*.go") {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				switch {
				case !d.Name.IsExported():
				case d.Recv == nil && !qualified[d.Name.Name]:
					unused = append(unused, d.Name.Name)
				case d.Recv != nil && exportedRecv(d.Recv) && !selected[d.Name.Name]:
					unused = append(unused, "method "+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if !qualified[s.Name.Name] {
							unused = append(unused, s.Name.Name)
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									if n.IsExported() && !selected[n.Name] {
										unused = append(unused, s.Name.Name+"."+n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && !qualified[n.Name] {
								unused = append(unused, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(unused)
	if len(unused) > 0 {
		t.Errorf("exported but not used by package policy (unexport them): %s", strings.Join(unused, ", "))
	}
}

// exportedRecv reports whether a method's receiver is an exported type
// (methods of unexported types, such as ast.Value's on the lazy input, are
// not part of the package's API).
func exportedRecv(r *ast.FieldList) bool {
	t := r.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
