package export

import (
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
)

// TestRowHasEveryField: each field of the record schema (audit.Record's
// JSON names, nested objects as <object>_<field>) is a column, so a field
// added to the schema cannot be left out of the export unnoticed.
func TestRowHasEveryField(t *testing.T) {
	columns := map[string]bool{}
	rt := reflect.TypeFor[Row]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("parquet"), ",")
		columns[name] = true
	}
	jsonName := func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return name
	}
	var missing []string
	for f := range reflect.TypeFor[audit.Record]().Fields() {
		name := jsonName(f)
		if ft := f.Type; ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			for sf := range ft.Elem().Fields() {
				if sub := jsonName(sf); sub != "-" && !columns[name+"_"+sub] {
					missing = append(missing, name+"_"+sub)
				}
			}
			continue
		}
		if !columns[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("record fields without a column in export.Row: %v (add them to Row, NewRow, Row.Record and the README's column list)", missing)
	}
}
