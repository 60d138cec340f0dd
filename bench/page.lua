-- page.lua: wrk script for tricks.sh. GET a random page of 10 users sorted by name,
-- of the side-by-side dataset's 1,000 users.
request = function()
  return wrk.format("GET", "/api/users?sortBy=name&pageSize=10&page=" .. math.random(1, 100))
end
