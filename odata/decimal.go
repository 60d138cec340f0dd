package odata

import (
	"bytes"
	"cmp"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Decimals are int64 counts of 1/decimalScale. Addition, subtraction, comparison
// and mod are exact; mul and div round the exact result half away from zero to
// four digits. A result out of range, or a division by zero, is null (false).

const maxDecInt = math.MaxInt64 / decimalScale

// parseDecimal parses [sign] digits [. digits] into units of 1/decimalScale, cut
// toward zero; cut reports non-zero digits past the scale. It reports false for an
// exponent or too large a value.
func parseDecimal(s string) (v int64, cut, ok bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	ip, fp, _ := strings.Cut(s, ".")
	if strings.ContainsAny(s, "eE") {
		return 0, false, false
	}
	fp, cut = (fp + "0000")[:4], strings.Trim(fp[min(len(fp), 4):], "0") != ""
	i, err := strconv.ParseInt(ip, 10, 64)
	if err != nil || i > maxDecInt {
		return 0, false, false
	}
	f, _ := strconv.ParseInt(fp, 10, 64)
	v = i*decimalScale + f
	if v < 0 {
		return 0, false, false
	}
	if neg {
		v = -v
	}
	return v, cut, true
}

func appendDecimal(b []byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/decimalScale, 10)
	if f := u % decimalScale; f != 0 {
		var d [5]byte
		frac := strconv.AppendUint(d[:0], f+decimalScale, 10) // "1" and four digits
		frac[0] = '.'
		b = append(b, bytes.TrimRight(frac, "0")...)
	}
	return b
}

// decFromInt converts an integer to a decimal; false when out of range.
func decFromInt(i int64) (int64, bool) {
	if i > maxDecInt || i < -maxDecInt {
		return 0, false
	}
	return i * decimalScale, true
}

func decToFloat(d int64) float64 { return float64(d) / decimalScale }

// cmpDecInt compares decimal d with integer i exactly, without scaling i.
func cmpDecInt(d, i int64) int {
	if c := cmp.Compare(d/decimalScale, i); c != 0 {
		return c
	}
	return cmp.Compare(d%decimalScale, 0)
}

func decAdd(a, b int64) (int64, bool) {
	c := a + b
	return c, (c > a) == (b > 0) || b == 0
}

func decSub(a, b int64) (int64, bool) {
	c := a - b
	return c, (c < a) == (b > 0) || b == 0
}

func decMul(a, b int64) (int64, bool) {
	return mulDiv(abs64(a), abs64(b), decimalScale, (a < 0) != (b < 0))
}

func decDiv(a, b int64) (int64, bool) {
	if b == 0 {
		return 0, false
	}
	return mulDiv(abs64(a), decimalScale, abs64(b), (a < 0) != (b < 0))
}

// mulDiv returns x*y/d, exact in 128 bits and rounded half away from zero, negated
// if neg; false when out of range.
func mulDiv(x, y, d uint64, neg bool) (int64, bool) {
	hi, lo := bits.Mul64(x, y)
	if hi >= d {
		return 0, false
	}
	q, r := bits.Div64(hi, lo, d)
	if r >= d-r { // r*2 >= d without overflow
		q++
	}
	switch {
	case q > math.MaxInt64:
		return 0, false
	case neg:
		return -int64(q), true
	}
	return int64(q), true
}

func decMod(a, b int64) (int64, bool) {
	if b == 0 {
		return 0, false
	}
	if b == -1 {
		return 0, true
	}
	return a % b, true
}

func abs64(a int64) uint64 {
	if a < 0 {
		return -uint64(a)
	}
	return uint64(a)
}

// decRound rounds half away from zero to an integral decimal.
func decRound(d int64) int64 {
	r := d % decimalScale
	d -= r
	if r >= decimalScale/2 {
		d += decimalScale
	} else if r <= -decimalScale/2 {
		d -= decimalScale
	}
	return d
}

func decFloor(d int64) int64 {
	r := d % decimalScale
	if r < 0 {
		r += decimalScale
	}
	return d - r
}

func decCeil(d int64) int64 {
	return -decFloor(-d)
}
