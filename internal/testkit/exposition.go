package testkit

import (
	"fmt"
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
// histogram's by its _bucket, _sum and _count), each family once, label values
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
			if !slices.Contains([]string{"counter", "gauge", "histogram"}, typ) {
				fail("type %q", typ)
			}
			types[name], current = typ, name
			continue
		}
		s := parseSample(t, line)
		base := s.Name
		if types[current] == "histogram" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
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

func parseSample(t testing.TB, line string) Sample {
	t.Helper()
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		t.Fatalf("sample %q: no name", line)
	}
	s.Name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for line[0] != '}' {
			name, rest, ok := strings.Cut(line, `="`)
			if !ok {
				t.Fatalf("label in %q", line)
			}
			var value strings.Builder
			j := 0
			for ; rest[j] != '"'; j++ {
				if rest[j] == '\\' {
					j++
					switch rest[j] {
					case '\\', '"':
						value.WriteByte(rest[j])
					case 'n':
						value.WriteByte('\n')
					default:
						t.Fatalf("escape \\%c in %q", rest[j], rest)
					}
					continue
				}
				if rest[j] == '\n' {
					t.Fatalf("raw newline in label value")
				}
				value.WriteByte(rest[j])
			}
			s.Labels[name] = value.String()
			line = strings.TrimPrefix(rest[j+1:], ",")
		}
		line = line[1:]
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(line, " "), 64)
	if err != nil || !strings.HasPrefix(line, " ") {
		t.Fatalf("value %q: %v", line, err)
	}
	s.Value = v
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
