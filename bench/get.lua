-- get.lua: wrk script for tricks.sh. GET /api/users/{id} for random ids of the
-- side-by-side dataset (1,000 users), like the harness's REST scenario.
request = function()
  return wrk.format("GET", "/api/users/" .. math.random(1, 1000))
end
