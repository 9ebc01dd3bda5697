package storage

import (
	"io"
	"os"
)

// file is what the WARC writer and the crawl log need of an open file:
// *os.File, or in this package's tests a wrapper that injects write and
// fsync failures (the package's file system seam; there is no portable way
// to make a real fsync(2) fail on demand).
type file interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
	Name() string
}

// openFunc opens a file as os.OpenFile does.
type openFunc func(name string, flag int, perm os.FileMode) (file, error)

// osOpen is the openFunc of the real file system: os.OpenFile.
func osOpen(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return f, nil
}
