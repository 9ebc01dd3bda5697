// Package cli holds what zkcrawl's commands share: GNU-style flags whose
// every flag can also come from an environment variable, --help text, and
// the log/slog setup (--log-format, --log-level).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/zkcrawl/zkcrawl/coord"
)

// EnvPrefix starts every environment variable that sets a flag: --zk is
// ZKCRAWL_ZK, --session-timeout is ZKCRAWL_SESSION_TIMEOUT.
const EnvPrefix = "ZKCRAWL_"

// EnvName returns the environment variable for a flag name.
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// NewFlagSet returns a flag set for a command whose --help prints usage (one
// line, e.g. "crawler --zk HOST:PORT --crawl NAME --out DIR [flags]"), about
// (a paragraph), the flags with their environment variables, and examples.
func NewFlagSet(name, usage, about, examples string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() {
		addVersionFlag(fs)
		out := fs.Output()
		fmt.Fprintf(out, "Usage: %s\n\n%s\n\nFlags (each also settable by the environment variable shown):\n", usage, strings.TrimSpace(about))
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Usage != "" && !strings.Contains(f.Usage, "[env ") && f.Name != versionFlag {
				f.Usage += " [env " + EnvName(f.Name) + "]"
			}
		})
		fmt.Fprint(out, fs.FlagUsages())
		if examples != "" {
			fmt.Fprintf(out, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
		}
	}
	return fs
}

// versionFlag is the --version flag every flag set gets, after its own
// flags, when parsed or shown.
const versionFlag = "version"

func addVersionFlag(fs *pflag.FlagSet) {
	if fs.Lookup(versionFlag) == nil {
		fs.Bool(versionFlag, false, "print the version (module version and VCS revision) and exit")
	}
}

// Parse parses args, then sets every flag not given on the command line from
// its environment variable (EnvName), if set: the command line wins. Errors
// name the flag or variable and the reason; pflag.ErrHelp for --help, and
// for --version after printing VersionLine to the flag set's output.
func Parse(fs *pflag.FlagSet, args []string, lookup func(string) (string, bool)) error {
	addVersionFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if v, err := fs.GetBool(versionFlag); err == nil && v {
		fmt.Fprintln(os.Stdout, VersionLine(strings.Fields(fs.Name())[0]))
		return pflag.ErrHelp
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == versionFlag {
			return
		}
		v, ok := lookup(EnvName(f.Name))
		if !ok {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s=%q: %w", EnvName(f.Name), v, err))
		}
	})
	if len(errs) > 0 {
		return usageError{errors.Join(errs...)}
	}
	return nil
}

// LogFlags adds --log-format (text|json) and --log-level (debug|info|warn|
// error) and returns a function that builds the logger once flags are
// parsed.
func LogFlags(fs *pflag.FlagSet) func(w io.Writer) (*slog.Logger, error) {
	format := fs.String("log-format", "text", "log format: text or json")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	return func(w io.Writer) (*slog.Logger, error) {
		var lv slog.Level
		if err := lv.UnmarshalText([]byte(*level)); err != nil {
			return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", *level)
		}
		opts := &slog.HandlerOptions{Level: lv}
		switch *format {
		case "text":
			return slog.New(slog.NewTextHandler(w, opts)), nil
		case "json":
			return slog.New(slog.NewJSONHandler(w, opts)), nil
		}
		return nil, fmt.Errorf("--log-format %q: want text or json", *format)
	}
}

// Main runs a command's run function with a context cancelled by SIGINT or
// SIGTERM and exits with Outcome's status, printing its message to stderr:
// 0 on success or --help, 2 on a usage error, the status given to
// WithExitStatus, 1 otherwise.
func Main(name string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	msg, code := Outcome(name, err)
	if msg != "" {
		fmt.Fprint(os.Stderr, msg)
	}
	os.Exit(code)
}

// Outcome turns a command's error into what Main prints on stderr and its
// exit status: nothing and 0 on success or --help; the error and a pointer
// to --help, 2, on a usage error; the error and the flag that fixes it, 1,
// when ZooKeeper refused the credentials; the error, 1, otherwise.
func Outcome(name string, err error) (string, int) {
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return "", 0
	case errors.As(err, new(exitStatus)):
		var st exitStatus
		errors.As(err, &st)
		return fmt.Sprintf("%s: %v\n", name, err), st.code
	case IsUsage(err):
		return fmt.Sprintf("%s: %v\nRun '%s --help' for usage.\n", name, err, name), 2
	case errors.Is(err, coord.ErrNotAuthorized):
		return fmt.Sprintf("%s: %v: the crawl's znodes are readable by its credentials only; give the seeder's --zk-auth (or ZKCRAWL_ZK_AUTH)\n", name, err), 1
	default:
		return fmt.Sprintf("%s: %v\n", name, err), 1
	}
}

// exitStatus carries an exit status other than 1 for an error.
type exitStatus struct {
	error
	code int
}

func (e exitStatus) Unwrap() error { return e.error }

// WithExitStatus makes Main exit with code (3..125; see each command's
// --help) instead of 1 after printing err, for failures a supervisor must
// tell apart, e.g. a crawler refusing to start during a drain.
func WithExitStatus(code int, err error) error { return exitStatus{err, code} }

type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// Usage marks err as a usage error (exit status 2).
func Usage(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// IsUsage reports whether err is a usage error (from Usage or Parse).
func IsUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}
