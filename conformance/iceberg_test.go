package conformance

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/countersign/countersign/conformance/icebergs3"
	"github.com/countersign/countersign/conformance/remotesigning"
)

// The recorder of the iceberg-go test running now (the scheme registry is
// process-wide; these tests do not run in parallel).
var icebergRecorder atomic.Pointer[remotesigning.Recorder]

// registerSignedS3 re-registers iceberg-go's "s3" scheme (see icebergs3):
// every S3 request of every FileIO is signed by the countersign named in
// the catalog properties; S3 requests go to srv's loopback port.
func registerSignedS3(srv *s3Server) *remotesigning.Recorder {
	rec := &remotesigning.Recorder{}
	icebergRecorder.Store(rec)
	icebergs3.Register(icebergs3.Options{
		HTTPClient: srv.httpClient(),
		Configure: func(_ map[string]string, cfg *remotesigning.Config) {
			cfg.Cache = remotesigning.NewCache()
			cfg.OnExchange = func(ex remotesigning.Exchange) {
				if r := icebergRecorder.Load(); r != nil {
					r.Record(ex)
				}
			}
		},
	})
	return rec
}

// icebergCatalog opens iceberg-go's SQL catalog (SQLite, pure Go) on dbPath
// with the remote-signing properties a Java engine would be given.
func icebergCatalog(t testing.TB, dbPath string, srv *s3Server, cs *signerProc, token string) *sqlcat.Catalog {
	t.Helper()
	db, err := sql.Open(sqliteshim.ShimName, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("conformance", db, sqlcat.SQLite, iceberg.Properties{
		"warehouse":                   "s3://lake/wh",
		"s3.endpoint":                 srv.endpoint(),
		"s3.region":                   testRegion,
		"s3.remote-signing-enabled":   "true",
		remotesigning.PropS3SignerURI: cs.url,
		remotesigning.PropToken:       token,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

var (
	eventsIdent = table.Identifier{"analytics", "events"}
	eventsSpec  = iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
)

func eventsSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "payload", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	)
}

// eventRows builds an Arrow table of n rows with ids from first, regions
// cycling through regions, and payloadBytes of random (incompressible)
// payload per row.
func eventRows(t testing.TB, first int64, n int, regions []string, payloadBytes int) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(eventsSchema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	raw := make([]byte, payloadBytes*3/4+3)
	for i := 0; i < n; i++ {
		id := first + int64(i)
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(regions[i%len(regions)])
		if payloadBytes > 0 {
			rand.Read(raw)
			b.Field(2).(*array.StringBuilder).Append(base64.StdEncoding.EncodeToString(raw)[:payloadBytes])
		} else {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("event %d", id))
		}
		b.Field(3).(*array.Float64Builder).Append(float64(id) / 4)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// scanIDs scans tbl (with filter, if any) and returns the ids and regions
// it read.
func scanIDs(t testing.TB, ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression) ([]int64, map[string]int) {
	t.Helper()
	var opts []table.ScanOption
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	res, err := tbl.Scan(opts...).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer res.Release()
	var ids []int64
	regions := map[string]int{}
	rdr := array.NewTableReader(res, 4096)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		idc := rec.Column(int(rec.Schema().FieldIndices("id")[0])).(*array.Int64)
		rc := rec.Column(int(rec.Schema().FieldIndices("region")[0])).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			ids = append(ids, idc.Value(i))
			regions[rc.Value(i)]++
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids, regions
}

func idRange(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestIcebergGoEndToEnd runs iceberg-go's own table code (SQL catalog,
// Parquet writer, manifests, scans, deletes, snapshot expiry) against
// versitygw with every S3 request signed by countersign, first as a
// principal that may write the table, then as one that may only read it.
func TestIcebergGoEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	cs := startCountersign(t, baseConfig(t, srv.Port, ""), secretEnv()...)
	rec := registerSignedS3(srv)
	// Every exchange is checked before a phase's record is dropped.
	resetRec := func() {
		t.Helper()
		requireCleanExchanges(t, rec.Exchanges())
		rec.Reset()
	}
	dbPath := filepath.Join(t.TempDir(), "catalog.db")
	writer := icebergCatalog(t, dbPath, srv, cs, defaultToken())

	if err := writer.CreateNamespace(ctx, table.Identifier{"analytics"}, iceberg.Properties{"owner": "conformance"}); err != nil {
		t.Fatal(err)
	}
	tbl, err := writer.CreateTable(ctx, eventsIdent, eventsSchema(),
		catalog.WithPartitionSpec(&eventsSpec),
		catalog.WithLocation("s3://lake/wh/analytics/events"),
		// Uncompressed, so the large batch's file is over the 16 MiB
		// multipart threshold of iceberg-go's S3 writer.
		catalog.WithProperties(iceberg.Properties{table.ParquetCompressionKey: "uncompressed"}))
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	if keys := srv.adminList(t, "lake", "wh/analytics/events/metadata/"); len(keys) != 1 || !strings.HasSuffix(keys[0], ".metadata.json") {
		t.Fatalf("metadata written through countersign: %v", keys)
	}

	// Three appends: two small batches across partitions, one large one.
	regions := []string{"eu", "us", "ap"}
	for i, batch := range []arrow.Table{
		eventRows(t, 0, 300, regions, 0),
		eventRows(t, 300, 300, regions, 0),
		eventRows(t, 600, 18000, []string{"bulk"}, 1024),
	} {
		tbl, err = tbl.AppendTable(ctx, batch, 4096, iceberg.Properties{"batch": fmt.Sprint(i)})
		batch.Release()
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	ops := opCounts(rec.Exchanges())
	t.Logf("writes signed: %s", opSummary(ops))
	for _, op := range []string{"PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"} {
		if ops[op] == 0 {
			t.Fatalf("no %s was signed while appending: %s", op, opSummary(ops))
		}
	}
	bulkFiles := srv.adminList(t, "lake", "wh/analytics/events/data/region=bulk/")
	if len(bulkFiles) != 1 {
		t.Fatalf("bulk partition files: %v", bulkFiles)
	}
	if len(srv.adminGet(t, "lake", bulkFiles[0])) < 16<<20 {
		t.Fatalf("the large data file is under the multipart threshold")
	}

	// Load through the catalog and scan.
	tbl, err = writer.LoadTable(ctx, eventsIdent)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 3 {
		t.Fatalf("%d snapshots, want 3", n)
	}
	resetRec()
	ids, byRegion := scanIDs(t, ctx, tbl, nil)
	if !slices.Equal(ids, idRange(0, 18600)) || byRegion["bulk"] != 18000 || byRegion["eu"] != 200 {
		t.Fatalf("full scan: %d rows, regions %v", len(ids), byRegion)
	}
	fullScanGets := opCounts(rec.Exchanges())["GetObject"]
	resetRec()
	ids, byRegion = scanIDs(t, ctx, tbl, iceberg.EqualTo(iceberg.Reference("region"), "eu"))
	if len(ids) != 200 || byRegion["eu"] != 200 || len(byRegion) != 1 {
		t.Fatalf("filtered scan: %d rows, regions %v", len(ids), byRegion)
	}
	if got := opCounts(rec.Exchanges())["GetObject"]; got == 0 || got >= fullScanGets {
		t.Fatalf("filtered scan signed %d GETs, the full scan %d: partition pruning should read fewer files", got, fullScanGets)
	}

	// The read-only principal, through its own catalog on the same SQLite
	// database: it loads and scans, and its first write is refused by
	// countersign with a 403 that reaches the caller.
	t.Run("read-only principal", func(t *testing.T) {
		reader := icebergCatalog(t, dbPath, srv, cs, testIdP.Mint("lake-reader", []string{"lakehouse-readers"}, nil))
		rtbl, err := reader.LoadTable(ctx, eventsIdent)
		if err != nil {
			t.Fatalf("load as reader: %v", err)
		}
		ids, _ := scanIDs(t, ctx, rtbl, iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(500)))
		if len(ids) != 18100 {
			t.Fatalf("reader's scan read %d rows, want 18100", len(ids))
		}
		before := srv.adminList(t, "lake", "wh/")
		batch := eventRows(t, 100000, 10, regions, 0)
		defer batch.Release()
		_, err = rtbl.AppendTable(ctx, batch, 1024, nil)
		if err == nil {
			t.Fatal("a read-only principal committed an append")
		}
		msg := err.Error()
		if !strings.Contains(msg, "Forbidden") || !strings.Contains(msg, "HTTP 403") || !strings.Contains(msg, "PutObject") {
			t.Fatalf("the append failed, but not with countersign's 403 naming PutObject: %v", err)
		}
		t.Logf("read-only append refused: %v", err)
		if after := srv.adminList(t, "lake", "wh/"); !slices.Equal(before, after) {
			t.Fatalf("a refused append changed the warehouse:\nbefore %v\nafter  %v", before, after)
		}
		again, err := writer.LoadTable(ctx, eventsIdent)
		if err != nil {
			t.Fatal(err)
		}
		if again.CurrentSnapshot().SnapshotID != rtbl.CurrentSnapshot().SnapshotID {
			t.Fatal("the table's snapshot changed after a refused append")
		}
	})

	// Row-level delete (copy-on-write rewrites of partially matching files)
	// and a partition-wide delete, then snapshot expiry, whose post-commit
	// cleanup deletes the unreferenced data files, manifests and manifest
	// lists through countersign.
	tbl, err = tbl.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(60)), nil)
	if err != nil {
		t.Fatalf("delete id < 60: %v", err)
	}
	tbl, err = tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("region"), "bulk"), nil)
	if err != nil {
		t.Fatalf("delete region = bulk: %v", err)
	}
	ids, byRegion = scanIDs(t, ctx, tbl, nil)
	if !slices.Equal(ids, idRange(60, 600)) || byRegion["bulk"] != 0 {
		t.Fatalf("after deletes: %d rows (%v)", len(ids), byRegion)
	}
	resetRec()
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatalf("expire snapshots: %v", err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry, want 1", n)
	}
	ops = opCounts(rec.Exchanges())
	t.Logf("expiry signed: %s", opSummary(ops))
	if ops["DeleteObject"] == 0 {
		t.Fatalf("snapshot expiry deleted nothing through countersign: %s", opSummary(ops))
	}
	if srv.adminExists(t, "lake", bulkFiles[0]) {
		t.Fatalf("the deleted partition's data file %s is still in the bucket", bulkFiles[0])
	}
	ids, _ = scanIDs(t, ctx, tbl, nil)
	if !slices.Equal(ids, idRange(60, 600)) {
		t.Fatalf("after expiry: %d rows", len(ids))
	}
	requireCleanExchanges(t, rec.Exchanges())
}

// TestIcebergGoWrongSecret: a countersign holding the wrong secret signs,
// versitygw refuses, and iceberg-go's caller sees SignatureDoesNotMatch: a
// signer that signed nothing or anything would not pass the test above.
func TestIcebergGoWrongSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := startS3(t)
	srv.CreateBucket(t, "lake")
	cs := startCountersign(t, baseConfig(t, srv.Port, ""), wrongSecretEnv()...)
	rec := registerSignedS3(srv)
	cat := icebergCatalog(t, filepath.Join(t.TempDir(), "catalog.db"), srv, cs, defaultToken())
	if err := cat.CreateNamespace(ctx, table.Identifier{"analytics"}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := cat.CreateTable(ctx, eventsIdent, eventsSchema(), catalog.WithLocation("s3://lake/wh/analytics/events"))
	if err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Fatalf("create table with a wrongly keyed signer: %v, want SignatureDoesNotMatch", err)
	}
	if len(rec.Exchanges()) == 0 {
		t.Fatal("countersign was not asked")
	}
	if keys := srv.adminList(t, "lake", ""); len(keys) != 0 {
		t.Fatalf("objects written despite bad signatures: %v", keys)
	}
}
