package fetch

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrBadRetryAfter is wrapped by ParseRetryAfter's error for a value that is
// neither delta-seconds nor an HTTP-date.
var ErrBadRetryAfter = errors.New("not delta-seconds nor an HTTP-date")

// maxRetryAfterSeconds bounds the delta-seconds ParseRetryAfter turns into a
// time.Duration (about 292 years fit; a year is more than any cap).
const maxRetryAfterSeconds = math.MaxInt64 / int64(time.Second)

// ParseRetryAfter parses a Retry-After field value (RFC 9110 section
// 10.2.3): delta-seconds (1*DIGIT, "120") or an HTTP-date (IMF-fixdate, or
// the obsolete RFC 850 and asctime forms a recipient must accept, RFC 9110
// section 5.6.7; net/http.ParseTime). It returns how long to wait from now:
// the seconds, or the date minus now; 0 for a date already past. A delta too
// large for a time.Duration gives the largest one (the caller caps it).
// Surrounding whitespace is ignored. Errors: an empty or other value,
// wrapping ErrBadRetryAfter and quoting the value.
func ParseRetryAfter(value string, now time.Time) (time.Duration, error) {
	v := strings.TrimSpace(value)
	if v != "" && strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > maxRetryAfterSeconds { // only overflow fails: all digits
			return time.Duration(math.MaxInt64), nil
		}
		return time.Duration(n) * time.Second, nil
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, fmt.Errorf("Retry-After %q: %w", value, ErrBadRetryAfter)
	}
	return max(t.Sub(now), 0), nil
}

// Throttled reports whether an HTTP status asks the client to slow down:
// 429 Too Many Requests (RFC 6585 section 4) or 503 Service Unavailable
// (RFC 9110 section 15.6.4), the two statuses RFC 9110 names for
// Retry-After's use in a response.
func Throttled(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}
