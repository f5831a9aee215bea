package audit

import (
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Defaults. A zero value in Config means "use the default", so a
// hand-built Config and one decoded from a partial YAML section behave the
// same.
const (
	DefaultSegmentMaxBytes    = 64 << 20
	DefaultSegmentMaxAge      = time.Hour
	DefaultCheckpointInterval = time.Second
	DefaultHeartbeatInterval  = 30 * time.Second
	DefaultQueueMax           = 16384
	DefaultRetryInterval      = time.Second

	// SyncKeepP and SyncSyscall are Config.SyncMode's values.
	SyncKeepP   = "keep_p"
	SyncSyscall = "syscall"
	// SlowSyncThreshold is the flush time past which a keep_p writer
	// stops keeping its P: about ten times a healthy flush on a virtual
	// disk, so only a stalling device trips it.
	SlowSyncThreshold = 5 * time.Millisecond

	// minSegmentBytes keeps rotation from turning into one segment per
	// batch; tests use it to rotate after a few records.
	minSegmentBytes = 4096
	// minHMACKeyLen is RFC 2104's advice: at least the hash output length.
	minHMACKeyLen = 32
	maxNodeIDLen  = 128
)

// Config is the audit section of countersign's configuration (yaml under
// "audit:"). Error messages name keys as audit.<key>.
type Config struct {
	// Dir holds the segments and checkpoints; created 0750 if missing.
	// One process at a time (a lock file enforces it).
	Dir string `yaml:"dir"`
	// NodeID names this node's log: records carry it and checkpoints are
	// for origin "countersign/<node_id>". Letters, digits, '.', '_', '-'.
	// Default: the host name. An existing log keeps the node id it was
	// created with: a different explicit node_id is an error, a defaulted
	// one adopts the log's.
	NodeID string `yaml:"node_id"`
	// SegmentMaxBytes rotates the current segment at the first batch
	// boundary at or past this size. Default 64 MiB.
	SegmentMaxBytes int64 `yaml:"segment_max_bytes"`
	// SegmentMaxAge rotates a segment this long after it was opened, even
	// when idle, so sealed segments reach the upload at a steady pace.
	// Default 1h.
	SegmentMaxAge time.Duration `yaml:"segment_max_age"`
	// CheckpointInterval bounds the time between records arriving and a
	// signed checkpoint covering them. Default 1s.
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// HeartbeatInterval writes a heartbeat record and a checkpoint after
	// this long without records, so an idle node still proves it was up and
	// its log was intact. Default 30s.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// CommitDelay, when set, makes the writer wait this long before a
	// batch when the previous batch was busy (4 records or more), so that
	// one fdatasync carries more records: less CPU per record when the
	// server is CPU-bound (300µs measured +6-7% throughput at -c 64 with
	// ~1 ms fdatasync, p99 unchanged: bench/README.md), at the price of
	// that much latency under load. Default 0: no wait.
	CommitDelay time.Duration `yaml:"commit_delay"`
	// SyncMode is how the writer's fdatasync waits for the disk:
	// "keep_p" (the default) makes it a raw system call that keeps the
	// writer's scheduler slot, sparing the Go runtime a thread hand-off and
	// its monitor's polling per group commit (8-10% of the server's CPU
	// per signed request on this project's test machine: bench/README.md,
	// "Flushing in place"); serve gives the runtime one more P for it. A
	// flush slower than SlowSyncThreshold switches the next ones to the
	// ordinary blocking call until one is fast again, so a stalled disk
	// does not hold a P. "syscall": always the ordinary call. Only Linux
	// has the raw call; elsewhere both are the ordinary one.
	SyncMode string `yaml:"sync_mode"`
	// CheckpointKeyFile holds the Ed25519 note signer key that signs
	// checkpoints ("countersign audit keygen" writes one). Required.
	CheckpointKeyFile string `yaml:"checkpoint_key_file"`
	// HMACKeyFile holds the key for token_hmac: the file's bytes, surrounding
	// whitespace trimmed, at least 32 ("countersign audit keygen" writes 32
	// random bytes in hex). Required unless Options.HMACKey is set.
	HMACKeyFile string `yaml:"hmac_key_file"`
	// QueueMax bounds the records waiting for the writer. When full, Append
	// waits until there is room or its context is done. A single Append of
	// more records than QueueMax is admitted when the queue is empty.
	// Default 16384 (~11 MiB of 700-byte records).
	QueueMax int `yaml:"queue_max"`
}

// Options are the Log's collaborators, set in code rather than
// configuration.
type Options struct {
	// Now is the clock for record times and ages (default time.Now).
	Now func() time.Time
	// Logger gets faults, recoveries and rotations (default: discard).
	Logger *slog.Logger
	// OpenFile opens every file the log writes, and directories for fsync.
	// Default: os.OpenFile, with Sync being fdatasync(2) for files and
	// fsync(2) for directories. Tests set it to inject faults at the
	// narrowest point: the write and sync calls of one file.
	OpenFile func(name string, flag int, perm os.FileMode) (File, error)
	// HMACKey overrides Config.HMACKeyFile (for a key from the environment).
	HMACKey []byte
	// CheckpointKey overrides Config.CheckpointKeyFile: a note signer key.
	CheckpointKey string
	// RetryInterval is how often an unhealthy log tries to recover into a
	// new segment (default 1s).
	RetryInterval time.Duration
	// Reporter receives the log's measurements (nil: none are reported).
	Reporter Reporter
	// OnSeal is called by the writer after a segment is sealed (its final
	// checkpoint is durable), e.g. to start its upload. It must not block.
	OnSeal func(SegmentInfo)
}

func (c Config) withDefaults() Config {
	if c.SegmentMaxBytes == 0 {
		c.SegmentMaxBytes = DefaultSegmentMaxBytes
	}
	if c.SegmentMaxAge == 0 {
		c.SegmentMaxAge = DefaultSegmentMaxAge
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.QueueMax == 0 {
		c.QueueMax = DefaultQueueMax
	}
	if c.SyncMode == "" {
		c.SyncMode = SyncKeepP
	}
	return c
}

// KeepsP reports whether the writer's fdatasync keeps its P (SyncMode
// keep_p where the raw call exists): serve then gives the runtime one more.
func (c Config) KeepsP() bool {
	return c.withDefaults().SyncMode == SyncKeepP && rawDatasyncAvailable
}

// Validate checks the configuration after defaults, naming the key. It
// does not read the key files (Open does).
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Dir == "" {
		return fmt.Errorf("audit.dir is required: the audit log is never optional")
	}
	if c.NodeID != "" && !validNodeID(c.NodeID) {
		return fmt.Errorf("audit.node_id %q: use 1-%d letters, digits, '.', '_' or '-'", c.NodeID, maxNodeIDLen)
	}
	if c.SegmentMaxBytes < minSegmentBytes {
		return fmt.Errorf("audit.segment_max_bytes %d: at least %d", c.SegmentMaxBytes, minSegmentBytes)
	}
	if c.SegmentMaxAge < time.Second {
		return fmt.Errorf("audit.segment_max_age %s: at least 1s", c.SegmentMaxAge)
	}
	if c.CheckpointInterval < time.Millisecond {
		return fmt.Errorf("audit.checkpoint_interval %s: at least 1ms", c.CheckpointInterval)
	}
	if c.HeartbeatInterval < time.Millisecond {
		return fmt.Errorf("audit.heartbeat_interval %s: at least 1ms", c.HeartbeatInterval)
	}
	if c.QueueMax < 1 {
		return fmt.Errorf("audit.queue_max %d: at least 1", c.QueueMax)
	}
	if c.SyncMode != SyncKeepP && c.SyncMode != SyncSyscall {
		return fmt.Errorf("audit.sync_mode %q: %q (the default) or %q", c.SyncMode, SyncKeepP, SyncSyscall)
	}
	if c.CommitDelay < 0 || c.CommitDelay > time.Second {
		return fmt.Errorf("audit.commit_delay %s: between 0 and 1s (a few hundred µs is the useful range)", c.CommitDelay)
	}
	return nil
}

func validNodeID(s string) bool {
	if s == "" || len(s) > maxNodeIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// defaultNodeID is the host name, reduced to the node id alphabet.
func defaultNodeID() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("audit.node_id: not set and no host name: %w", err)
	}
	b := []byte(h)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > maxNodeIDLen {
		b = b[:maxNodeIDLen]
	}
	if len(b) == 0 {
		return "", fmt.Errorf("audit.node_id: not set and the host name is empty")
	}
	return string(b), nil
}
