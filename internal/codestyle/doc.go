// Package codestyle holds no code: its test keeps the house rules that a
// compiler does not check. Production code states contracts and bounds;
// its history (issue numbers, incidents) lives in git and docs/design.md.
package codestyle
