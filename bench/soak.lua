-- bench/soak.lua: the mixed load of bench/soak.sh for wrk. Each request:
-- 65% reads (get one sandbox, list), 12% create (a delete instead once a
-- thread holds 50 live sandboxes), 10% exec `true`, 8% delete (each sandbox
-- is deleted once). Ids come from the answers. wrk does
-- not say which request an answer belongs to, so statuses are counted: 2xx
-- ok; 404/409 "raced" (a get or exec of a sandbox whose delete went first:
-- expected under this load); anything else, and socket errors, are errors.
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

local ids, nids, gone = {}, 0, {}
ok, raced, errors = 0, 0, 0
local key

function init(args)
  key = "soak-" .. id
  math.randomseed(id * 7919)
end

local function add(i)
  if gone[i] then return end
  for k = 1, nids do if ids[k] == i then return end end
  nids = nids + 1
  ids[nids] = i
end

function request()
  local r = math.random(100)
  local h = { ["X-Api-Key"] = key, ["Content-Type"] = "application/json" }
  local k = nids > 0 and math.random(nids) or 0
  local sb = ids[k]
  -- about 50 live sandboxes per thread: past that a create becomes a delete
  if r <= 12 and nids > 50 then r = 30 end
  if r <= 12 or sb == nil then
    return wrk.format("POST", "/v1/sandboxes", h, '{"shape":"s-1vcpu-256mb"}')
  elseif r <= 22 then
    return wrk.format("POST", "/v1/sandboxes/" .. sb .. "/exec", h, '{"cmd":"true"}')
  elseif r <= 30 and nids > 4 then
    ids[k] = ids[nids]; ids[nids] = nil; nids = nids - 1
    gone[sb] = true
    return wrk.format("DELETE", "/v1/sandboxes/" .. sb, h)
  elseif r <= 65 then
    return wrk.format("GET", "/v1/sandboxes/" .. sb, h)
  end
  return wrk.format("GET", "/v1/sandboxes?limit=20", h)
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    ok = ok + 1
    local i = string.match(body, '^{"status":"success","data":{"id":"(sb%-[^"]+)"')
    if i ~= nil then add(i) end
  elseif status == 404 or status == 409 then
    raced = raced + 1
  else
    errors = errors + 1
    if errors <= 5 then io.stderr:write("soak: " .. status .. ": " .. body .. "\n") end
  end
end

function done(summary, latency, requests)
  local o, r, e = 0, 0, 0
  for _, t in ipairs(threads) do
    o = o + t:get("ok"); r = r + t:get("raced"); e = e + t:get("errors")
  end
  local s = summary.errors
  io.write(string.format("soak: %d ok, %d raced a delete (404/409), %d errors, %d socket errors\n",
    o, r, e, s.connect + s.read + s.write + s.timeout))
end
