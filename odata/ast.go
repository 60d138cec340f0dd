package odata

import "time"

// Type is the type of an expression as computed by the type checker.
type Type int

// Expression types. Int is Edm.Int32 or Edm.Int64; Decimal is an int64 count of
// 1/decimalScale; Date is carried as midnight UTC.
const (
	TypeInvalid Type = iota
	TypeNull
	TypeBool
	TypeInt
	TypeDecimal
	TypeDouble
	TypeString
	TypeDate
	TypeDateTimeOffset
	TypeEntity     // a single-valued navigation
	TypeCollection // a collection-valued navigation
)

var typeNames = [...]string{"invalid", "null", "Edm.Boolean", "Edm.Int64", "Edm.Decimal", "Edm.Double", "Edm.String", "Edm.Date", "Edm.DateTimeOffset", "entity", "collection"}

// String returns the type's name.
func (t Type) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "invalid"
}

func (t Type) numeric() bool { return t == TypeInt || t == TypeDecimal || t == TypeDouble }

// Expr is a node of the expression tree: Pos is its byte offset in the option
// value, Type its type once the checker has set it.
type Expr interface {
	Pos() int
	Type() Type
}

type exprBase struct { // every node embeds it
	pos int
	typ Type
}

func (e *exprBase) Pos() int   { return e.pos }
func (e *exprBase) Type() Type { return e.typ }

func (e *exprBase) setTyp(t Type) { e.typ = t }

// Literal is a constant; Kind says which value field holds it (Int also for
// decimals, in units of 1/decimalScale).
type Literal struct {
	exprBase
	Kind  Type
	Int   int64
	Float float64
	Str   string
	Bool  bool
	Time  time.Time
	cut   bool // a Double written as a decimal with digits past the scale, cut to it in Int
}

// Segment is one step of a member path.
type Segment struct {
	Name string
	Pos  int
}

// Path is a member expression such as name, product/name, o/quantity or
// orders/$count($filter=...). The checker sets Var (the lambda variable it
// starts from, -1 for the current entity), Navs, Prop (nil when it ends in a
// navigation) and Count; or, when it names a $compute alias, alias and Var -1.
type Path struct {
	exprBase
	Segments    []Segment
	Var         int
	Navs        []*NavProperty
	Prop        *Property
	Count       bool
	CountFilter Expr      // the related entities /$count counts; nil for all
	alias       *computed // the $compute alias it names instead, if any
}

// Lambda is source/any(v: body) or source/all(v: body); Body is nil for any().
// Depth is the index of the range variable in the evaluation scope.
type Lambda struct {
	exprBase
	Source *Path
	All    bool
	Var    string
	Body   Expr
	Depth  int
}

// Call is a built-in function call such as contains(name,'x').
type Call struct {
	exprBase
	Name string // lower-cased
	Args []Expr
	fn   *function
}

// Unary is "not x" or "-x".
type Unary struct {
	exprBase
	Op string // "not" or "-"
	X  Expr
}

// Binary is a binary operator.
type Binary struct {
	exprBase
	Op   string // lower-cased operator keyword
	X, Y Expr
	num  Type // the operands' type after promotion
}

// In is "x in (a, b, ...)".
type In struct {
	exprBase
	X    Expr
	List []Expr
	num  Type
}
