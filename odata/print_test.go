package odata

import (
	"strconv"
	"strings"
	"time"
)

// exprString renders an expression tree fully parenthesized; it exists for
// tests and debugging.
func exprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *Literal:
		switch e.Kind {
		case TypeNull:
			b.WriteString("null")
		case TypeBool:
			b.WriteString(strconv.FormatBool(e.Bool))
		case TypeInt:
			b.WriteString(strconv.FormatInt(e.Int, 10))
		case TypeDecimal:
			b.WriteString(formatDecimal(e.Int))
		case TypeDouble:
			b.WriteString(strconv.FormatFloat(e.Float, 'g', -1, 64))
		case TypeString:
			b.WriteString("'" + strings.ReplaceAll(e.Str, "'", "''") + "'")
		case TypeDate:
			b.WriteString(e.Time.Format(time.DateOnly))
		case TypeDateTimeOffset:
			b.WriteString(e.Time.Format(time.RFC3339Nano))
		}
	case *Path:
		for i, s := range e.Segments {
			if i > 0 {
				b.WriteByte('/')
			}
			b.WriteString(s.Name)
		}
		if e.CountFilter != nil {
			b.WriteString("($filter=")
			writeExpr(b, e.CountFilter)
			b.WriteByte(')')
		}
	case *Lambda:
		writeExpr(b, e.Source)
		if e.All {
			b.WriteString("/all(")
		} else {
			b.WriteString("/any(")
		}
		if e.Body != nil {
			b.WriteString(e.Var + ": ")
			writeExpr(b, e.Body)
		}
		b.WriteByte(')')
	case *Call:
		b.WriteString(e.Name + "(")
		for i, a := range e.Args {
			if i > 0 {
				b.WriteByte(' ')
			}
			writeExpr(b, a)
		}
		b.WriteByte(')')
	case *Unary:
		b.WriteString("(" + e.Op + " ")
		writeExpr(b, e.X)
		b.WriteByte(')')
	case *Binary:
		b.WriteByte('(')
		writeExpr(b, e.X)
		b.WriteString(" " + e.Op + " ")
		writeExpr(b, e.Y)
		b.WriteByte(')')
	case *In:
		b.WriteByte('(')
		writeExpr(b, e.X)
		b.WriteString(" in [")
		for i, x := range e.List {
			if i > 0 {
				b.WriteByte(' ')
			}
			writeExpr(b, x)
		}
		b.WriteString("])")
	}
}
