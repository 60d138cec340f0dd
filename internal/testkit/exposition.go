package testkit

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Sample is one parsed sample line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseExposition parses the Prometheus text format strictly enough to catch what a
// scraper rejects: every sample belongs to a family introduced by HELP and TYPE (a
// histogram's by its _bucket, _sum and _count, a summary's by its quantiles, _sum and
// _count), each family once, label values
// escaped, values numbers.
func ParseExposition(t testing.TB, text string) []Sample {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		t.Fatal("the exposition does not end with a newline")
	}
	types := map[string]string{}
	var help, current string
	var out []Sample
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) { t.Fatalf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...)) }
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if _, seen := types[name]; seen || help == name {
				fail("family repeated")
			}
			help = name
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			if name != help {
				fail("TYPE without its HELP")
			}
			if !slices.Contains([]string{"counter", "gauge", "histogram", "summary"}, typ) {
				fail("type %q", typ)
			}
			types[name], current = typ, name
			continue
		}
		s := parseSample(t, line)
		base := s.Name
		if suffixes, ok := familySuffixes[types[current]]; ok {
			for _, suffix := range suffixes {
				if b, ok := strings.CutSuffix(s.Name, suffix); ok {
					base = b
					break
				}
			}
		}
		if base != current {
			fail("sample outside its family %q", current)
		}
		out = append(out, s)
	}
	return out
}

// familySuffixes are the suffixes of the samples of a family of several series.
var familySuffixes = map[string][]string{"histogram": {"_bucket", "_sum", "_count"}, "summary": {"_sum", "_count"}}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:` + labelText + `,?)*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(labelText)
	unescape   = strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n")
)

// labelText is one label: its name, and its value escaping only a backslash, a quote and a newline.
const labelText = `([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"`

func parseSample(t testing.TB, line string) Sample {
	t.Helper()
	m := sampleLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("sample %q: not name{labels} value", line)
	}
	v, err := strconv.ParseFloat(m[len(m)-1], 64)
	if err != nil {
		t.Fatalf("value in %q: %v", line, err)
	}
	s := Sample{Name: m[1], Labels: map[string]string{}, Value: v}
	for _, pair := range labelPair.FindAllStringSubmatch(m[2], -1) {
		s.Labels[pair[1]] = unescape.Replace(pair[2])
	}
	return s
}

// FindSample returns the value of the sample with name and exactly these labels, 0 if none.
func FindSample(samples []Sample, name string, labels ...string) float64 {
next:
	for _, s := range samples {
		if s.Name != name || len(s.Labels) != len(labels)/2 {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			if s.Labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		return s.Value
	}
	return 0
}
