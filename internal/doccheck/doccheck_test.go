package doccheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fileExts are the endings that make a word a file name worth checking.
var fileExts = []string{".go", ".md", ".rego", ".json", ".jsonl", ".yaml", ".yml", ".mod", ".txt", ".sh", ".py", ".pub"}

// pathWord is a word that may be a relative path: letters, digits and
// . _ - separated by slashes, optionally ending in one.
var pathWord = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$`)

// backticked finds `code spans` in Markdown.
var backticked = regexp.MustCompile("`([^`\n]+)`")

// The name of the brief, split so that this file does not name it.
var briefNames = []string{"DESIGN" + " §", "DESIGN" + ".md", "DESIGN" + "'s"}

// TestDocumentedFilesExist checks every Go comment and Markdown file of the
// repository (all its modules; testdata excluded) for names of files that
// do not exist.
func TestDocumentedFilesExist(t *testing.T) {
	root := repoRoot(t)
	top := topLevel(t, root)
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		var texts []string
		var bare bool // whether a bare file name is checked in the file's directory
		switch {
		case strings.HasSuffix(p, ".go"):
			texts = goComments(t, p)
			bare = true
		case strings.HasSuffix(p, ".md"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range backticked.FindAllStringSubmatch(string(b), -1) {
				texts = append(texts, m[1])
			}
			for _, name := range briefNames {
				if strings.Contains(string(b), name) {
					t.Errorf("%s cites %q, which is not in the repository: cite docs/design.md", rel, name)
				}
			}
		default:
			return nil
		}
		checked++
		dir := path.Dir(rel)
		for _, text := range texts {
			if strings.HasSuffix(p, ".go") {
				for _, name := range briefNames {
					if strings.Contains(text, name) {
						t.Errorf("%s: a comment cites %q, which is not in the repository: cite docs/design.md", rel, name)
					}
				}
			}
			for _, w := range strings.Fields(text) {
				if name, ok := missing(root, top, dir, w, bare); ok {
					t.Errorf("%s names %s, which is not in the repository", rel, name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files under %s", checked, root)
	}
}

// missing reports whether w (returned cleaned) names a file or directory that does not exist:
// a path whose first element is a top-level entry of the repository,
// relative to the root; a path relative to dir; or, when bare is set, a
// file name with one of fileExts, in dir.
func missing(root string, top map[string]bool, dir, w string, bare bool) (string, bool) {
	w = strings.Trim(w, "()[]{},;:!?\"'`*")
	w = strings.TrimSuffix(w, ".")
	w, _, _ = strings.Cut(w, "#") // README.md#section
	if !pathWord.MatchString(w) || strings.Contains(w, "..") || strings.HasPrefix(w, ".") {
		return "", false
	}
	hasExt := slices.ContainsFunc(fileExts, func(ext string) bool { return strings.HasSuffix(w, ext) })
	first, _, slash := strings.Cut(w, "/")
	switch {
	case slash && (hasExt || strings.HasSuffix(w, "/")):
		if top[first] {
			return w, !exists(root, w) && !exists(root, path.Join(dir, w))
		}
		// Relative to the file's directory, if it starts there.
		if exists(root, path.Join(dir, first)) {
			return w, !exists(root, path.Join(dir, w))
		}
	case !slash && bare && hasExt && strings.HasSuffix(w, ".go") && w != "doc.go":
		// A Go file named in a comment is its own package's, or a
		// top-level one's.
		return w, !exists(root, path.Join(dir, w)) && !exists(root, w)
	}
	return "", false
}

func exists(root, rel string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// goComments returns the comments of a Go file.
func goComments(t *testing.T, p string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range f.Comments {
		out = append(out, g.Text())
	}
	return out
}

// repoRoot is the directory of the module's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/countersign/countersign\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/countersign/countersign above the test's directory")
		}
		dir = parent
	}
}

// topLevel lists the repository's top-level entries.
func topLevel(t *testing.T, root string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	top := make(map[string]bool, len(entries))
	for _, e := range entries {
		top[e.Name()] = true
	}
	return top
}
