package fetch

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestReason(t *testing.T) {
	long := "http://127.1.2.3:8080/" + strings.Repeat("abcdef0123", 200)
	cause := &url.Error{Op: "Get", URL: long, Err: errors.New("dial tcp 127.1.2.3:8080: connect: connection refused")}
	err := &Error{Code: CodeConnectFailed, URL: long, Err: cause}
	got := Reason(err)
	if strings.Contains(got, "abcdef") || !strings.Contains(got, "connection refused") || !strings.HasPrefix(got, CodeName(CodeConnectFailed)) {
		t.Errorf("Reason = %q: want the code and the cause without the URL", got)
	}
	if got := Reason(context.Canceled); got != "context canceled" {
		t.Errorf("Reason(context.Canceled) = %q", got)
	}
	if got := Reason(errors.New(strings.Repeat("é", 400))); len(got) > MaxReasonBytes || !strings.HasSuffix(got, "...") {
		t.Errorf("long reason not cut: %d bytes", len(got))
	}
	if Reason(nil) != "" {
		t.Error("Reason(nil) != \"\"")
	}
}
