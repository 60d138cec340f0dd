-- post.lua: wrk script for writes.sh. Every request creates a new user: the name and
-- email carry a per-thread counter and a random number, so no two collide.
counter = 0
request = function()
  counter = counter + 1
  local n = math.random(1, 1000000000)
  local body = string.format('{"name":"W %d %d","email":"w%d.%d@example.com"}', n, counter, n, counter)
  return wrk.format("POST", "/api/users", {["Content-Type"]="application/json"}, body)
end
