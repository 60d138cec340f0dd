package odata

import (
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Compiled calls of the built-in functions.

func strArg(c *compiler, call *Call, i int) fn[string] {
	return c.as(call.Args[i], TypeString).(fn[string])
}

func buildStrPred(c *compiler, call *Call) any {
	preds := map[string]func(string, string) bool{
		"contains": strings.Contains, "startswith": strings.HasPrefix, "endswith": strings.HasSuffix,
	}
	l, ok := call.Args[1].(*Literal)
	if !ok || l.Kind != TypeString {
		return map2(strArg(c, call, 0), strArg(c, call, 1), preds[call.Name])
	}
	k, arg := l.Str, call.Args[0]
	if inner, ok := arg.(*Call); ok && inner.Name == "tolower" && isLower(k) {
		// contains(tolower(x),'lit'): fold case while searching instead of
		// building a lower-cased copy of every value.
		arg = inner.Args[0]
		preds = map[string]func(string, string) bool{
			"contains": containsFold, "startswith": hasPrefixFold, "endswith": hasSuffixFold,
		}
	}
	f := preds[call.Name]
	if p, ok := arg.(*Path); ok && direct(p) {
		get := p.Prop.String
		return fn[bool](func(it any, _ []any) (bool, bool) { return f(get(it), k), true })
	}
	return map1(c.as(arg, TypeString).(fn[string]), func(a string) bool { return f(a, k) })
}

func buildLength(c *compiler, call *Call) any {
	return map1(strArg(c, call, 0), func(s string) int64 { return int64(utf8.RuneCountInString(s)) })
}

func buildIndexOf(c *compiler, call *Call) any {
	return map2(strArg(c, call, 0), strArg(c, call, 1), func(s, sub string) int64 {
		i := strings.Index(s, sub)
		if i < 0 {
			return -1
		}
		return int64(utf8.RuneCountInString(s[:i]))
	})
}

func buildStrMap(c *compiler, call *Call) any {
	if call.Name == "trim" {
		return map1(strArg(c, call, 0), strings.TrimSpace) // a substring: nothing is built
	}
	f := map[string]func(string) string{"tolower": strings.ToLower, "toupper": strings.ToUpper}[call.Name]
	eval := c.eval
	return map1(strArg(c, call, 0), func(s string) string {
		eval.build(len(s))
		return f(s)
	})
}

func buildConcat(c *compiler, call *Call) any {
	eval := c.eval
	return map2(strArg(c, call, 0), strArg(c, call, 1), func(a, b string) string {
		eval.build(len(a) + len(b))
		return a + b
	})
}

// substring counts characters (runes). A start past the end yields "", a
// negative start counts from 0, and a negative length yields "".
func buildSubstring(c *compiler, call *Call) any {
	s := strArg(c, call, 0)
	start, n := c.as(call.Args[1], TypeInt).(fn[int64]), constFn[int64](int64(math.MaxInt64), true)
	if len(call.Args) == 3 {
		n = c.as(call.Args[2], TypeInt).(fn[int64])
	}
	return fn[string](func(it any, v []any) (string, bool) {
		str, ok1 := s(it, v)
		i, ok2 := start(it, v)
		k, ok3 := n(it, v)
		if !ok1 || !ok2 || !ok3 {
			return "", false
		}
		return substr(str, i, k), true
	})
}

func substr(s string, start, n int64) string {
	if n <= 0 {
		return ""
	}
	start = max(start, 0)
	var i int64
	b := -1
	for off := range s {
		if i == start {
			b = off
		}
		if b >= 0 && i == start+n {
			return s[b:off]
		}
		i++
	}
	if b < 0 {
		return ""
	}
	return s[b:]
}

func buildDatePart(c *compiler, call *Call) any {
	f := map[string]func(time.Time) int64{
		"year":   func(t time.Time) int64 { return int64(t.Year()) },
		"month":  func(t time.Time) int64 { return int64(t.Month()) },
		"day":    func(t time.Time) int64 { return int64(t.Day()) },
		"hour":   func(t time.Time) int64 { return int64(t.Hour()) },
		"minute": func(t time.Time) int64 { return int64(t.Minute()) },
		"second": func(t time.Time) int64 { return int64(t.Second()) },
	}[call.Name]
	return map1(c.as(call.Args[0], TypeDateTimeOffset).(fn[time.Time]), f)
}

func buildDate(c *compiler, call *Call) any {
	return map1(c.as(call.Args[0], TypeDateTimeOffset).(fn[time.Time]), func(t time.Time) time.Time {
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	})
}

func buildRounding(c *compiler, call *Call) any {
	if call.Type() == TypeDouble {
		f := map[string]func(float64) float64{"round": math.Round, "floor": math.Floor, "ceiling": math.Ceil}[call.Name]
		return map1(c.as(call.Args[0], TypeDouble).(fn[float64]), f)
	}
	f := map[string]func(int64) int64{"round": decRound, "floor": decFloor, "ceiling": decCeil}[call.Name]
	return map1(c.as(call.Args[0], TypeDecimal).(fn[int64]), f)
}

func buildNow(c *compiler, _ *Call) any { return constFn[time.Time](c.now, true) }

// Case-insensitive search for a lower-case needle, for contains(tolower(x),...).

func isLower(s string) bool { return strings.ToLower(s) == s }

func containsFold(s, lower string) bool {
	if isASCII(s) && isASCII(lower) {
		n := len(lower)
		for i := 0; i+n <= len(s); i++ {
			if strings.EqualFold(s[i:i+n], lower) {
				return true
			}
		}
		return false
	}
	return strings.Contains(strings.ToLower(s), lower)
}

func hasPrefixFold(s, lower string) bool {
	if isASCII(s) && isASCII(lower) {
		return len(s) >= len(lower) && strings.EqualFold(s[:len(lower)], lower)
	}
	return strings.HasPrefix(strings.ToLower(s), lower)
}

func hasSuffixFold(s, lower string) bool {
	if isASCII(s) && isASCII(lower) {
		return len(s) >= len(lower) && strings.EqualFold(s[len(s)-len(lower):], lower)
	}
	return strings.HasSuffix(strings.ToLower(s), lower)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
