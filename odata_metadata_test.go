package main

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"quartet/odata"
)

// csdlDoc is what TestODataCapabilities reads of $metadata: each entity set's
// annotations.
type csdlDoc struct {
	Sets []struct {
		Name        string `xml:"Name,attr"`
		Annotations []struct {
			Term   string `xml:"Term,attr"`
			Bool   string `xml:"Bool,attr"`
			Int    string `xml:"Int,attr"`
			String string `xml:"String,attr"`
			Props  []struct {
				Property string `xml:"Property,attr"`
				Bool     string `xml:"Bool,attr"`
				Int      string `xml:"Int,attr"`
			} `xml:"Record>PropertyValue"`
		} `xml:"Annotation"`
	} `xml:"DataServices>Schema>EntityContainer>EntitySet"`
}

// TestODataCapabilities: the capability annotations of $metadata state each set's
// route settings and the odata.Limits in force, read here from the routes'
// Settings and the Limits struct, not written out; and the service enforces
// exactly the limits the document states: a query at the stated $top and
// $orderby keys is served, one past either is refused.
func TestODataCapabilities(t *testing.T) {
	a, _ := startApp(t, testConfig())
	base := "http://" + a.httpAddr + "/api/"
	resp, err := http.Get(base + "$metadata")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc csdlDoc
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	service := newODataService(NewStore(), time.Now, "")
	if len(doc.Sets) != len(service.Sets) {
		t.Fatalf("$metadata has %d entity sets, the service %d", len(doc.Sets), len(service.Sets))
	}
	const capNS = "Org.OData.Capabilities.V1."
	for _, set := range doc.Sets {
		routes, ok := service.Sets[set.Name]
		if !ok {
			t.Fatalf("$metadata names set %s, which the service does not serve", set.Name)
		}
		st := routes.List.Settings
		limits := st.Limits
		if limits == (odata.Limits{}) {
			limits = odata.DefaultLimits
		}
		got := map[string]string{} // term or term/property -> value
		for _, an := range set.Annotations {
			got[an.Term] = an.Bool + an.Int + an.String
			for _, p := range an.Props {
				got[an.Term+"/"+p.Property] = p.Bool + p.Int
			}
		}
		allowed := func(o odata.QueryOption) string { return strconv.FormatBool(st.Allowed&o != 0) }
		want := map[string]string{
			capNS + "TopSupported":                   allowed(odata.OptTop),
			capNS + "SkipSupported":                  allowed(odata.OptSkip),
			capNS + "CountRestrictions/Countable":    allowed(odata.OptCount),
			capNS + "FilterRestrictions/Filterable":  allowed(odata.OptFilter),
			capNS + "SortRestrictions/Sortable":      allowed(odata.OptOrderBy),
			capNS + "SearchRestrictions/Searchable":  allowed(odata.OptSearch),
			capNS + "SelectSupport/ComputeSupported": allowed(odata.OptCompute),
			capNS + "ExpandRestrictions/MaxLevels":   strconv.Itoa(st.MaxExpansionDepth),
			capNS + "InsertRestrictions/Insertable":  "false",
			"Quartet.MaxTop":                         strconv.FormatInt(st.MaxTop, 10),
			"Quartet.MaxOrderByKeys":                 strconv.Itoa(limits.MaxOrderByKeys),
			"Quartet.MaxFilterNodes":                 strconv.Itoa(limits.MaxNodes),
			"Quartet.MaxQueryBytes":                  strconv.Itoa(limits.MaxQueryBytes),
			"Quartet.MaxLambdaDepth":                 strconv.Itoa(limits.MaxLambdaDepth),
			"Org.OData.Core.V1.Description":          routes.List.Set.Description,
		}
		for term, w := range want {
			if got[term] != w {
				t.Errorf("%s: %s = %q, want %q", set.Name, term, got[term], w)
			}
		}

		// The stated limits are the enforced ones.
		maxTop, _ := strconv.Atoi(got["Quartet.MaxTop"])
		maxKeys, _ := strconv.Atoi(got["Quartet.MaxOrderByKeys"])
		keys := func(n int) string { return strings.TrimSuffix(strings.Repeat("id,", n), ",") }
		for _, tt := range []struct {
			query string
			want  int
		}{
			{"$top=" + strconv.Itoa(maxTop), http.StatusOK},
			{"$top=" + strconv.Itoa(maxTop+1), http.StatusBadRequest},
			{"$orderby=" + keys(maxKeys), http.StatusOK},
			{"$orderby=" + keys(maxKeys+1), http.StatusBadRequest},
		} {
			resp, err := http.Get(base + set.Name + "?" + (&url.URL{RawQuery: tt.query}).Query().Encode())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s?%s: %d, want %d", set.Name, tt.query, resp.StatusCode, tt.want)
			}
		}
	}
}

// TestODataContextURL checks that context URLs never repeat the request's Host header,
// which a client chooses: without -public-url they are paths, with it they start with
// the configured URL, on a collection, an entity, a property, the service document and
// inside $batch.
func TestODataContextURL(t *testing.T) {
	for _, tc := range []struct{ publicURL, want string }{
		{"", "/api/$metadata"},
		{"https://api.example.com/shop", "https://api.example.com/shop/api/$metadata"},
	} {
		cfg := testConfig()
		cfg.publicURL = tc.publicURL
		a, _ := startApp(t, cfg)
		for _, path := range []string{"/api/products", "/api/products(1)", "/api/Products(1)/name", "/api/", "/api/orders?$format=application/json;odata.metadata=full"} {
			req, _ := http.NewRequest("GET", "http://"+a.httpAddr+path, nil)
			req.Host = "attacker.example"
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var v struct {
				Context string `json:"@odata.context"`
			}
			json.Unmarshal(body, &v)
			if resp.StatusCode != 200 || !strings.HasPrefix(v.Context, tc.want) || strings.Contains(string(body), "attacker") {
				t.Errorf("-public-url %q: GET %s: %d, context %q, want it to start with %q, and no Host in %.200s", tc.publicURL, path, resp.StatusCode, v.Context, tc.want, body)
			}
		}
		batch := `{"requests":[{"id":"1","method":"GET","url":"products(1)"}]}`
		req, _ := http.NewRequest("POST", "http://"+a.httpAddr+"/api/$batch", strings.NewReader(batch))
		req.Host = "attacker.example"
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), strings.ReplaceAll(tc.want, "/", `\/`)) && !strings.Contains(string(body), tc.want) || strings.Contains(string(body), "attacker") {
			t.Errorf("-public-url %q: $batch: %d %.300s", tc.publicURL, resp.StatusCode, body)
		}
	}
}
