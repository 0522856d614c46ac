package workshops

import (
	"crypto/rand"
	"math/big"
	"strings"
)

// CodeAlphabet is what join codes are made of: readable aloud, without
// 0/O, 1/l/I.
const CodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// CodeLength is a new join code's length: 31^10, about 2^49.5 codes, so a
// guesser within the join limits (limits/limits.go) needs years per hit
// (the sums are in docs/SECURITY.md). Codes of 6 made before keep working
// until their workshop ends.
const CodeLength = 10

// NewCode draws a join code with crypto/rand.
func NewCode() string {
	b := make([]byte, CodeLength)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(CodeAlphabet))))
		if err != nil {
			panic(err)
		}
		b[i] = CodeAlphabet[n.Int64()]
	}
	return string(b)
}

// DisplayCode groups a code for reading and typing: ABCDE-FGHJK. Older
// six-character codes are shown as they are.
func DisplayCode(code string) string {
	if len(code) == CodeLength {
		return code[:CodeLength/2] + "-" + code[CodeLength/2:]
	}
	return code
}

// NormalizeCode reads a code as people type or say it: any case, with
// spaces or dashes.
func NormalizeCode(s string) string {
	s = strings.ToUpper(s)
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '\t' {
			return -1
		}
		return r
	}, s)
}
