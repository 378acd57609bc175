-- wrk script for bench/bench_api.py: one request kind per run, chosen by MELO_BENCH_MODE.
--   games:   POST a two-player game between random players (MELO_PLAYERS of them)
--   predict: GET the win probability of a random pair
--   plain:   GET the URL given on the command line (the trivial endpoint, the leaderboard)
-- MELO_DELAY_MS paces each connection: that many milliseconds between its requests (a steady rate).
-- MELO_LADDERS spreads the games over that many ladders, MELO_LADDER0 .. MELO_LADDER<n-1> (each posted with its own
-- key, MELO_WRITE_KEYS: comma-separated, in the same order); without it, every game goes to MELO_LADDER.
-- At the end it prints one line "RESULT {json}" with counts and latency percentiles (µs).
local mode = os.getenv("MELO_BENCH_MODE") or "plain"
local players = tonumber(os.getenv("MELO_PLAYERS") or "10000")
local ladder = os.getenv("MELO_LADDER") or "bench"
local ladders = tonumber(os.getenv("MELO_LADDERS") or "0")
local keys = {}
for key in string.gmatch(os.getenv("MELO_WRITE_KEYS") or "", "[^,]+") do
  keys[#keys + 1] = key
end

function setup(thread)
  thread:set("seed", math.random(1, 2 ^ 30))
end

function init(args)
  math.randomseed(seed or os.time())
  if mode == "games" then
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    wrk.headers["Authorization"] = "Bearer " .. (os.getenv("MELO_WRITE_KEY") or "")
  end
end

local pace = tonumber(os.getenv("MELO_DELAY_MS") or "")
if pace then
  function delay()
    return pace
  end
end

local function pair()
  local a = math.random(0, players - 1)
  return a, (a + math.random(1, players - 1)) % players
end

function request()
  if mode == "games" then
    local a, b = pair()
    local body = string.format(
      '{"sides":[{"players":["p%d"],"rank":%d},{"players":["p%d"],"rank":%d}]}', a, 1, b, math.random(1, 2))
    if ladders > 0 then
      local n = math.random(0, ladders - 1)
      local headers = {["Authorization"] = "Bearer " .. keys[n + 1], ["Content-Type"] = "application/json"}
      return wrk.format(nil, "/v1/ladders/" .. ladder .. n .. "/games", headers, body)
    end
    return wrk.format(nil, "/v1/ladders/" .. ladder .. "/games", nil, body)
  elseif mode == "predict" then
    local a, b = pair()
    return wrk.format(nil, string.format("/v1/ladders/%s/predict?a=p%d&b=p%d", ladder, a, b))
  end
  return wrk.format()
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "socket_errors": %d, "non_2xx": %d, ' ..
    '"p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, "mean_us": %.1f}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
