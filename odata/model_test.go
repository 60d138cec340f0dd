package odata

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// The test model mirrors quartet's Product and Order over plain structs.

type product struct {
	ID       int64
	Name     string
	Price    int64 // 1/10,000
	Category string
	Created  time.Time
	Active   bool
	Orders   []any
}

type order struct {
	ID           int64
	UserID       int64
	ProductID    int64
	CustomerName string
	OrderDate    time.Time
	Quantity     int64
	Product      *product
}

func newTestModel() (*Model, *EntitySet, *EntitySet) {
	pt := &EntityType{Name: "Product", Key: "id", Properties: []*Property{
		{Name: "id", Type: EdmInt32, Int: func(x any) int64 { return x.(*product).ID }},
		{Name: "name", Type: EdmString, String: func(x any) string { return x.(*product).Name }},
		{Name: "price", Type: EdmDecimal, Decimal: func(x any) int64 { return x.(*product).Price }},
		{Name: "category", Type: EdmString, String: func(x any) string { return x.(*product).Category }},
		{Name: "createdDate", Type: EdmDateTimeOffset, Time: func(x any) time.Time { return x.(*product).Created }},
		{Name: "isActive", Type: EdmBoolean, Bool: func(x any) bool { return x.(*product).Active }},
	}}
	ot := &EntityType{Name: "Order", Key: "id", Properties: []*Property{
		{Name: "id", Type: EdmInt32, Int: func(x any) int64 { return x.(*order).ID }},
		{Name: "userId", Type: EdmInt32, Int: func(x any) int64 { return x.(*order).UserID }},
		{Name: "productId", Type: EdmInt32, Int: func(x any) int64 { return x.(*order).ProductID }},
		{Name: "customerName", Type: EdmString, String: func(x any) string { return x.(*order).CustomerName }},
		{Name: "orderDate", Type: EdmDateTimeOffset, Time: func(x any) time.Time { return x.(*order).OrderDate }},
		{Name: "quantity", Type: EdmInt32, Int: func(x any) int64 { return x.(*order).Quantity }},
	}}
	pt.Navigation = []*NavProperty{{Name: "orders", Target: ot, Collection: true, Partner: "product",
		Many: func(x any) []any { return x.(*product).Orders }}}
	ot.Navigation = []*NavProperty{{Name: "product", Target: pt, Partner: "orders",
		One: func(x any) (any, bool) {
			p := x.(*order).Product
			return p, p != nil
		}}}
	products := &EntitySet{Name: "Products", Type: pt}
	orders := &EntitySet{Name: "Orders", Type: ot}
	m, err := NewModel("Quartet", products, orders)
	if err != nil {
		panic(err)
	}
	return m, products, orders
}

func day(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// testData returns products and orders linked both ways. Order 7 refers to a
// product that does not exist, so its product navigation is null.
func testData() (products, orders []any) {
	ps := []*product{
		{1, "Laptop Pro", 9999900, "Electronics", day("2024-01-15T00:00:00Z"), true, nil},
		{2, "Mouse", 199900, "Electronics", day("2024-02-01T10:30:00Z"), true, nil},
		{3, "Desk", 2500000, "Furniture", day("2023-11-20T08:00:00Z"), false, nil},
		{4, "O'Brien Chair", 50000, "Furniture", day("2024-06-01T00:00:00Z"), true, nil},
		{5, "  Pencil  ", 5000, "Office", day("2024-06-01T23:59:59Z"), true, nil},
		{6, "Ünïcode Lamp", 12345678, "Home", day("2022-12-31T12:00:00Z"), false, nil},
	}
	os := []*order{
		{1, 1, 1, "Alice", day("2024-02-01T00:00:00Z"), 2, nil},
		{2, 2, 1, "Bob", day("2024-02-03T00:00:00Z"), 7, nil},
		{3, 1, 2, "Alice", day("2024-03-10T12:00:00Z"), 1, nil},
		{4, 0, 2, "Carol", day("2024-03-11T00:00:00Z"), 12, nil},
		{5, 3, 3, "Dave", day("2023-12-01T00:00:00Z"), 3, nil},
		{6, 1, 4, "Alice", day("2024-06-02T09:00:00Z"), 6, nil},
		{7, 2, 99, "Bob", day("2024-07-01T00:00:00Z"), 4, nil},
	}
	byID := map[int64]*product{}
	for _, p := range ps {
		byID[p.ID] = p
		products = append(products, p)
	}
	for _, o := range os {
		if p := byID[o.ProductID]; p != nil {
			o.Product = p
			p.Orders = append(p.Orders, o)
		}
		orders = append(orders, o)
	}
	return products, orders
}

var fixedNow = day("2024-07-01T12:00:00Z")

// testMux wires the five OData routes of docs/odata.md into a Service
// under /api/, the way the service does, beside a non-OData route.
func testMux() *http.ServeMux {
	m, ps, os := newTestModel()
	products, orders := testData()
	now := func() time.Time { return fixedNow }
	list := OptSelect | OptFilter | OptOrderBy | OptCount | OptExpand | OptTop | OptSkip
	listSettings := Settings{Allowed: list, MaxTop: 100, MaxExpansionDepth: 2, Now: now}
	entitySettings := Settings{Allowed: OptSelect | OptExpand, MaxExpansionDepth: 2, Now: now}
	get := func(items []any, id func(any) int64) func(context.Context, int64) (any, bool) {
		return func(_ context.Context, key int64) (any, bool) {
			for _, x := range items {
				if id(x) == key {
					return x, true
				}
			}
			return nil, false
		}
	}
	all := func(items []any) func(context.Context) []any {
		return func(context.Context) []any { return items }
	}
	pid := ps.Type.keyProperty().Int
	oid := os.Type.keyProperty().Int
	productList := &Route{Set: ps, Settings: listSettings, List: all(products), Metadata: "/api/$metadata"}
	productOne := &Route{Set: ps, Settings: entitySettings, Get: get(products, pid), Metadata: "/api/$metadata"}
	search := &Route{Set: ps, List: all(products), Metadata: "/api/$metadata", AlwaysCount: true,
		Settings: Settings{Allowed: OptFilter | OptOrderBy | OptSkip | OptTop, MaxTop: 100, MaxSkip: 1000, Now: now},
		Restrict: func(x any) bool { return x.(*product).Active }}
	orderList := &Route{Set: os, Settings: listSettings, List: all(orders), Metadata: "/api/$metadata"}
	orderOne := &Route{Set: os, Settings: entitySettings, Get: get(orders, oid), Metadata: "/api/$metadata"}

	svc := &Service{Model: m, Root: "/api/", RejectPassword: true, Sets: map[string]SetRoutes{
		ps.Name: {List: productList, Entity: productOne, Named: map[string]*Route{"search": search}},
		os.Name: {List: orderList, Entity: orderOne},
	}}
	mux := http.NewServeMux()
	mux.Handle("/api/", svc)
	mux.HandleFunc("GET /api/users", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "users") })
	return mux
}
