package main

import (
	"context"
	"net/http"
	"strings"
	"time"

	"quartet/odata"
)

// The OData surface: products and orders (docs/odata.md), served by the odata package
// over the shared store. Each route's allowed options and limits are declared here,
// once, in the manner of ASP.NET's [EnableQuery(...)].

// odataRoot is the OData service root; its resources are relative to it.
const (
	odataRoot         = "/api/"
	odataMetadataPath = odataRoot + "$metadata"
	odataBatchPath    = odataRoot + "$batch"
)

// newODataService describes Product and Order to the odata package, with getters over
// the store's records and navigation through the store. publicURL (-public-url) starts
// the context URLs of every answer; without it they are paths.
func newODataService(store *Store, clock func() time.Time, publicURL string) *odata.Service {
	metadataURL := publicURL + odataMetadataPath
	product := &odata.EntityType{Name: "Product", Key: "id"}
	order := &odata.EntityType{Name: "Order", Key: "id"}
	p := func(x any) *Product { return x.(*Product) }
	o := func(x any) *Order { return x.(*Order) }
	product.Properties = []*odata.Property{
		{Name: "id", Type: odata.EdmInt32, Int: func(x any) int64 { return p(x).ID }},
		{Name: "name", Type: odata.EdmString, String: func(x any) string { return p(x).Name }},
		{Name: "price", Type: odata.EdmDecimal, Decimal: func(x any) int64 { return int64(p(x).Price) },
			Description: "Unit price, exact to four decimal places (IEEE754Compatible=true sends it as a string)"},
		{Name: "category", Type: odata.EdmString, String: func(x any) string { return p(x).Category }},
		{Name: "createdDate", Type: odata.EdmDateTimeOffset, Time: func(x any) time.Time { return p(x).CreatedDate }},
		{Name: "isActive", Type: odata.EdmBoolean, Bool: func(x any) bool { return p(x).IsActive },
			Description: "Whether the product is on sale; /Products/search lists active products only"},
	}
	order.Properties = []*odata.Property{
		{Name: "id", Type: odata.EdmInt32, Int: func(x any) int64 { return o(x).ID }},
		{Name: "userId", Type: odata.EdmInt32, Int: func(x any) int64 { return o(x).UserID },
			Description: "The id of the user who ordered, served by the REST surface at /api/users/{id}"},
		{Name: "productId", Type: odata.EdmInt32, Int: func(x any) int64 { return o(x).ProductID }},
		{Name: "customerName", Type: odata.EdmString, String: func(x any) string { return o(x).CustomerName }},
		{Name: "orderDate", Type: odata.EdmDateTimeOffset, Time: func(x any) time.Time { return o(x).OrderDate }},
		{Name: "quantity", Type: odata.EdmInt32, Int: func(x any) int64 { return o(x).Quantity }},
	}
	product.Navigation = []*odata.NavProperty{{Name: "orders", Target: order, Collection: true, Partner: "product",
		Many: func(x any) []any { return values(store.OrdersByProduct(p(x).ID)) }}}
	order.Navigation = []*odata.NavProperty{{Name: "product", Target: product, Partner: "orders",
		One: func(x any) (any, bool) { return store.Product(o(x).ProductID) }}}
	productSet := &odata.EntitySet{Name: "Products", Type: product,
		Description: "The catalogue; /api/products and /api/Products are the same set"}
	orderSet := &odata.EntitySet{Name: "Orders", Type: order,
		Description: "Orders of products by users; /api/orders and /api/Orders are the same set"}
	model, err := odata.NewModel("Quartet", productSet, orderSet)
	if err != nil {
		panic("odata model: " + err.Error()) // a defect in the declarations above
	}

	// Settings.Limits is left zero: every route has odata.DefaultLimits.
	all := odata.OptSelect | odata.OptFilter | odata.OptOrderBy | odata.OptCount | odata.OptExpand | odata.OptTop | odata.OptSkip | odata.OptCompute
	list := odata.Settings{Allowed: all, MaxTop: 100, MaxExpansionDepth: 2, Now: clock}
	// $apply on both sets (the dashboard's totals), $search on products only:
	// orders have no text worth searching but a customer's name.
	productList, orderList := list, list
	productList.Allowed |= odata.OptApply | odata.OptSearch
	orderList.Allowed |= odata.OptApply
	one := odata.Settings{Allowed: odata.OptSelect | odata.OptExpand | odata.OptCompute, MaxExpansionDepth: 2, Now: clock}
	searchSettings := odata.Settings{Allowed: odata.OptFilter | odata.OptOrderBy | odata.OptSkip | odata.OptTop, MaxTop: 100, MaxSkip: 1000, Now: clock}
	products := func(context.Context) []any { return store.ProductValues() }
	getProduct := func(_ context.Context, id int64) (any, bool) { return store.Product(id) }
	getOrder := func(_ context.Context, id int64) (any, bool) { return store.Order(id) }
	return &odata.Service{Model: model, Root: odataRoot, Metadata: metadataURL, RejectPassword: true, Sets: map[string]odata.SetRoutes{
		productSet.Name: {
			List:   &odata.Route{Set: productSet, Settings: productList, Metadata: metadataURL, List: products},
			Entity: &odata.Route{Set: productSet, Settings: one, Metadata: metadataURL, Get: getProduct, ETag: true},
			Named: map[string]*odata.Route{"search": {Set: productSet, Settings: searchSettings, Metadata: metadataURL, List: products, AlwaysCount: true,
				Restrict: func(x any) bool { return p(x).IsActive }}}, // docs/odata.md: active products only
		},
		orderSet.Name: {
			List:   &odata.Route{Set: orderSet, Settings: orderList, Metadata: metadataURL, List: func(context.Context) []any { return store.OrderValues() }},
			Entity: &odata.Route{Set: orderSet, Settings: one, Metadata: metadataURL, Get: getOrder, ETag: true},
		},
	}}
}

// addODataRoutes registers the OData endpoints. ServeMux patterns cannot match inside
// a segment (/api/Products(5)) nor ignore letter case, so the odata package resolves
// every OData path itself, handed each path isODataPath claims by the catch-all of
// addFallbacks. The service document and $metadata are open to all; the data needs
// read access.
func (s *Server) addODataRoutes(service *odata.Service) {
	s.handle("GET "+odataRoot+"{$}", service.ServeHTTP)
	s.handle("GET "+strings.TrimSuffix(odataRoot, "/"), service.ServeHTTP)
	s.handle("GET "+odataMetadataPath, service.ServeHTTP)
	// Each request of a batch goes through the mux as if sent alone (logged once, as
	// the batch), so read access is checked on each, with the batch's credentials.
	batch := &odata.Batch{Handler: s.mux, Root: odataRoot, Serves: isODataPath}
	s.odata = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == odataBatchPath { // every method: it answers 405 and OPTIONS itself
			batch.ServeHTTP(w, r)
			return
		}
		read := r.Method == http.MethodGet || r.Method == http.MethodHead // else 405 or OPTIONS, before credentials
		if !read || !s.denied(w, r, s.opts.auth.readAccess(), writeODataError) {
			service.ServeHTTP(w, r)
		}
	}
}

// isODataPath reports whether path belongs to the OData service: its root, with or
// without the slash, and anything under it except the REST routes of users.
func isODataPath(path string) bool {
	if path+"/" == odataRoot {
		return true
	}
	rest, ok := strings.CutPrefix(path, odataRoot)
	return ok && rest != "users" && !strings.HasPrefix(rest, "users/")
}

// writeODataError answers a domain error (authentication, in practice) as an OData
// error body.
func writeODataError(w http.ResponseWriter, _ *http.Request, err error) {
	e := asError(err)
	odata.WriteError(w, kindCodes[e.Kind].http, kindCodes[e.Kind].odata, e.Message)
}
