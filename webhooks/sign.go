package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a delivery's signature.
const SignatureHeader = "X-Podpath-Signature"

// Sign is the X-Podpath-Signature of body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with secret>".
// The time is inside the signed text, so a captured delivery cannot be
// replayed later with a fresh time.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Errors Verify returns (wrapped, with what to check).
var (
	ErrMalformedSignature = errors.New("malformed X-Podpath-Signature")
	ErrBadSignature       = errors.New("X-Podpath-Signature does not match the body")
	ErrStaleSignature     = errors.New("X-Podpath-Signature is too old (or from the future)")
)

// Verify checks a delivery as a receiver should: header is the
// X-Podpath-Signature value, body the request body exactly as received
// (before any JSON decoding), secret the one registered with the webhook.
// The signature's time must be within tolerance of now (5 minutes is a
// good choice; 0 skips the check), so that an old delivery replayed is
// refused; de-duplicate retries by the X-Podpath-Delivery header. Any v1
// value may match (a header may carry several). It is the reference for
// receivers in other languages: HMAC-SHA256 of "<t>.<body>", hex, compared
// in constant time.
func Verify(secret []byte, header string, body []byte, tolerance time.Duration, now time.Time) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value; expect t=<unix seconds>,v1=<hex>", ErrMalformedSignature, part)
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil {
				return fmt.Errorf("%w: v1 is not hex", ErrMalformedSignature)
			}
			sigs = append(sigs, b)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return fmt.Errorf("%w: it needs both t=<unix seconds> and v1=<hex>", ErrMalformedSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: t=%q is not a number of seconds", ErrMalformedSignature, ts)
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: signed at %s, %s away from now (tolerance %s); check the receiver's clock", ErrStaleSignature,
				time.Unix(sec, 0).UTC().Format(time.RFC3339), d.Round(time.Second), tolerance)
		}
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: check the secret, and that the body is verified exactly as received", ErrBadSignature)
}
