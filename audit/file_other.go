//go:build !linux

package audit

// rawDatasyncAvailable: there is no raw fdatasync here, so Config.SyncMode
// keep_p is the ordinary call.
const rawDatasyncAvailable = false

// datasync is os.File.Sync where there is no fdatasync: on macOS that is
// fcntl(F_FULLFSYNC), the call that reaches the device there.
func (f *osFile) datasync() error { return f.File.Sync() }

// WriteBack does nothing here: the final Sync writes everything back.
func (f *osFile) WriteBack(off, n int64) error { return nil }

// dropCachedPages does nothing here: the pages stay cached.
func dropCachedPages(path string) error { return nil }
