package export

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestCheck alters an export one way at a time and requires Check to name
// the file and seq of each change, and to pass the export as written.
func TestCheck(t *testing.T) {
	tl := writeTestLog(t, 200, true)
	fsys := os.DirFS(tl.dir)
	fresh := func(t *testing.T) (string, *Result) {
		out := t.TempDir()
		res, err := Export(fsys, out)
		if err != nil {
			t.Fatal(err)
		}
		return out, res
	}
	rewrite := func(t *testing.T, path string, edit func([]Row) []Row) {
		rows, err := parquet.ReadFile[Row](path)
		if err != nil {
			t.Fatal(err)
		}
		if err := parquet.WriteFile(path, edit(rows)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, out string) *CheckResult {
		res, err := Check(fsys, out)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// want requires exactly the problems given, as "file-suffix|seq|text".
	want := func(t *testing.T, res *CheckResult, file string, seq int64, text string) {
		t.Helper()
		if len(res.Problems) != 1 {
			t.Fatalf("want 1 problem, got %d: %v", len(res.Problems), res.Problems[:min(3, len(res.Problems))])
		}
		p := res.Problems[0]
		if p.File != file || p.Seq != seq || !strings.Contains(p.Msg, text) {
			t.Fatalf("got %v\nwant %s: seq %d: ...%s...", p, file, seq, text)
		}
	}

	t.Run("clean", func(t *testing.T) {
		out, ex := fresh(t)
		res := check(t, out)
		rows := 0
		for _, f := range ex.Written {
			rows += f.Records
		}
		if len(res.Problems) != 0 || res.Files != len(ex.Written) || res.Rows != rows || len(res.Open) != 1 {
			t.Fatalf("clean export: %d files, %d rows, open %v, problems %v; want %d files, %d rows, 1 open", res.Files, res.Rows, res.Open, res.Problems[:min(3, len(res.Problems))], len(ex.Written), rows)
		}
	})
	t.Run("altered column", func(t *testing.T) {
		out, ex := fresh(t)
		f := ex.Written[1].Path
		var seq int64
		rewrite(t, f, func(rows []Row) []Row {
			i := slices.IndexFunc(rows, func(r Row) bool { return r.PrincipalID != nil })
			seq = rows[i].Seq
			rows[i].PrincipalID = ptr("mallory")
			return rows
		})
		want(t, check(t, out), f, seq, "column principal_id differs")
	})
	t.Run("altered time", func(t *testing.T) {
		out, ex := fresh(t)
		f := ex.Written[2].Path
		var seq int64
		rewrite(t, f, func(rows []Row) []Row {
			seq = rows[3].Seq
			rows[3].Time = rows[3].Time.Add(-1e3) // a microsecond
			return rows
		})
		want(t, check(t, out), f, seq, "column time differs")
	})
	t.Run("altered leaf hash", func(t *testing.T) {
		out, ex := fresh(t)
		f := ex.Written[0].Path
		var seq int64
		rewrite(t, f, func(rows []Row) []Row {
			seq = rows[2].Seq
			rows[2].LeafHash = rows[1].LeafHash
			return rows
		})
		want(t, check(t, out), f, seq, "leaf_hash ")
	})
	t.Run("dropped row", func(t *testing.T) {
		out, ex := fresh(t)
		f := ex.Written[1].Path
		var seq int64
		rewrite(t, f, func(rows []Row) []Row {
			seq = rows[4].Seq
			return slices.Delete(rows, 4, 5)
		})
		want(t, check(t, out), f, seq, "missing row")
	})
	t.Run("extra row", func(t *testing.T) {
		out, ex := fresh(t)
		f := ex.Written[1].Path
		var seq int64
		rewrite(t, f, func(rows []Row) []Row {
			extra := rows[len(rows)-1]
			extra.Seq += 1000
			seq = extra.Seq
			return append(rows, extra)
		})
		want(t, check(t, out), f, seq, "extra row: no record")
	})
	t.Run("duplicated row", func(t *testing.T) {
		out, ex := fresh(t)
		f := ex.Written[1].Path
		var seq int64
		rewrite(t, f, func(rows []Row) []Row {
			seq = rows[0].Seq
			return append(rows, rows[0])
		})
		want(t, check(t, out), f, seq, "more than once")
	})
	t.Run("missing file", func(t *testing.T) {
		out, ex := fresh(t)
		f := ex.Written[len(ex.Written)-1].Path
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		want(t, check(t, out), f, -1, "missing")
	})
	t.Run("segments removed after upload", func(t *testing.T) {
		out, ex := fresh(t)
		// The log as a directory whose first segments are gone.
		dir := t.TempDir()
		segs, _ := filepath.Glob(filepath.Join(tl.dir, "seg-*"))
		for _, f := range segs {
			if strings.HasPrefix(filepath.Base(f), strings.TrimSuffix(ex.Written[0].Segment, ".jsonl")) {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
		}
		res, err := Check(os.DirFS(dir), out)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Problems) != 0 || len(res.Earlier) != 1 || res.Earlier[0] != ex.Written[0].Path || res.Files != len(ex.Written)-1 {
			t.Fatalf("problems %v, earlier %v, %d files; want none, %s, %d", res.Problems, res.Earlier, res.Files, ex.Written[0].Path, len(ex.Written)-1)
		}
	})
	t.Run("extra file", func(t *testing.T) {
		out, ex := fresh(t)
		b, err := os.ReadFile(ex.Written[0].Path)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(filepath.Dir(ex.Written[0].Path), "copy.parquet")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		want(t, check(t, out), f, -1, "extra file")
	})
}
