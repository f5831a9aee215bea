package audit

import "time"

// Reporter receives what a Log measures; metrics.Metrics implements it.
// It is declared here, where it is called, and takes only standard types,
// so that metrics need not import audit. The log's state (Stats) is not
// pushed: it is read when a scrape asks for it.
type Reporter interface {
	// AuditBatch is called by the writer after each batch is durable, with
	// its record count and the duration of its fdatasync call alone. It
	// must not block.
	AuditBatch(records int, sync time.Duration)
}
