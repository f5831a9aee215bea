// Package doccheck has no code. Its test reads the repository's Go
// comments and Markdown files and fails when one of them names a file that
// is not in the repository: a repository-relative path like
// `policy/doc.go`, a Go file of the comment's own package, or the design
// brief the project was started from, which is not part of it
// (docs/design.md is the project's own).
package doccheck
