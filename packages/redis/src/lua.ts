/**
 * The Lua scripts the store runs: one per store call, each touching the keys of one thread only (one
 * hash tag, so one cluster slot), each atomic. Every key a script touches is derived from `KEYS[1]`,
 * the thread's base key, so a client-side `keyPrefix` (ioredis) applies to all of them.
 *
 * Layout under the base `B` (see keys.ts for the encoding of `<ns>`):
 *
 * - `B:m` hash: `ix`, the token of this thread's entry in the global thread index.
 * - `B:n` sorted set (lexicographic): the thread's namespaces, encoded.
 * - `B:k` hash: chunks, `<hash>\0<index>` -> bytes, and `<hash>` -> highest index + 1.
 * - `B:c:<ns>` sorted set: checkpoint records, members `<checkpoint id>\0<packed record>`.
 * - `B:b:<ns>` sorted set: blobs, members `<channel>\0<version>\0<packed value>`.
 * - `B:w:<ns>` sorted set: pending writes, members `<checkpoint id>\0<task id>\0<idx>\0<packed value>`.
 *
 * Ids never contain NUL, so `[x\0` .. `(x\1` selects exactly the members whose leading parts are `x`,
 * and `[ch\0root\0` .. `(ch\0version\1` exactly the versions `root <= v <= version` (byte order, which
 * is code point order for UTF-8). A packed value is `<refs, comma-separated>\n<JSON header>\n<bytes>`.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** A script with its SHA-1, for EVALSHA. */
export interface LuaScript {
  name: string;
  lua: string;
  sha: string;
}

const COMMON = `
local B = KEYS[1]
local M, N, K = B .. ':m', B .. ':n', B .. ':k'
local SEP = '\\0'
local function cKey(ns) return B .. ':c:' .. ns end
local function bKey(ns) return B .. ':b:' .. ns end
local function wKey(ns) return B .. ':w:' .. ns end
local function exact(key, p)
  return redis.call('ZRANGEBYLEX', key, '[' .. p .. SEP, '(' .. p .. '\\1', 'LIMIT', 0, 1)[1]
end
-- Position just after the n-th NUL of s.
local function after(s, n)
  local pos = 0
  for _ = 1, n do pos = string.find(s, SEP, pos + 1, true) end
  return pos + 1
end
-- The refs line of a packed value starting at from: appends its hashes; returns the next position.
local function refs(s, from, out)
  local nl = string.find(s, '\\n', from, true)
  if nl > from then for h in string.gmatch(string.sub(s, from, nl - 1), '[^,]+') do out[#out + 1] = h end end
  return nl + 1
end
local function headerAt(s, from)
  local nl = string.find(s, '\\n', from, true)
  return string.sub(s, from, nl - 1)
end
-- A record member: id, decoded header, header text; its refs go to out.
local function record(m, out)
  local s = string.find(m, SEP, 1, true)
  local from = refs(m, s + 1, out or {})
  local text = headerAt(m, from)
  return string.sub(m, 1, s - 1), cjson.decode(text), text
end
local function blobsOf(b, ch, ver, root)
  if root then return redis.call('ZRANGEBYLEX', b, '[' .. ch .. SEP .. root .. SEP, '(' .. ch .. SEP .. ver .. '\\1') end
  return redis.call('ZRANGEBYLEX', b, '[' .. ch .. SEP .. ver .. SEP, '(' .. ch .. SEP .. ver .. '\\1', 'LIMIT', 0, 1)
end
local function chunks(hashes)
  local out, seen = {}, {}
  for _, h in ipairs(hashes) do
    if not seen[h] then
      seen[h] = true
      local n = tonumber(redis.call('HGET', K, h) or '0')
      local i = 0
      while i < n do
        local fields = {}
        for j = i, math.min(n, i + 500) - 1 do fields[#fields + 1] = h .. SEP .. j end
        local vals = redis.call('HMGET', K, unpack(fields))
        for j = 1, #fields do if vals[j] then out[#out + 1] = {h, i + j - 1, vals[j]} end end
        i = i + 500
      end
    end
  end
  return out
end
local function putChunk(h, idx, data)
  if redis.call('HSETNX', K, h .. SEP .. idx, data) == 1 then
    local n = tonumber(redis.call('HGET', K, h) or '0')
    if tonumber(idx) + 1 > n then redis.call('HSET', K, h, tonumber(idx) + 1) end
  end
end
-- Gives every key of the thread the same absolute expiry: the new TTL, or the one the thread has, so
-- that it never expires in part (keys of a new namespace get it too).
local function refresh(ttl)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local at
  if ttl > 0 then at = now + ttl else
    local left = redis.call('PTTL', M)
    if left > 0 then at = now + left end
  end
  if not at then return end
  local keys = {M, N, K}
  for _, ns in ipairs(redis.call('ZRANGE', N, 0, -1)) do
    keys[#keys + 1] = cKey(ns); keys[#keys + 1] = bKey(ns); keys[#keys + 1] = wKey(ns)
  end
  for _, k in ipairs(keys) do redis.call('PEXPIREAT', k, at) end
end
-- One checkpoint with the blobs of its versions (delta ranges whole) and its writes; hashes collects
-- the pieces they reference.
local function readCheckpoint(ns, m, hashes)
  local id, h = record(m, hashes)
  local b = bKey(ns)
  local blobs = {}
  local roots = h.dr or {}
  for ch, ver in pairs(h.v) do
    for _, x in ipairs(blobsOf(b, ch, ver, roots[ch])) do
      blobs[#blobs + 1] = x
      refs(x, after(x, 2), hashes)
    end
  end
  local writes = redis.call('ZRANGEBYLEX', wKey(ns), '[' .. id .. SEP, '(' .. id .. '\\1')
  for _, x in ipairs(writes) do refs(x, after(x, 3), hashes) end
  return {m, blobs, writes}
end
`;

/** ARGV: mode (check|mark), token, ttl ms, ns, checkpoint id, packed record, n chunks, (hash, idx, bytes)*, n blobs, (channel, version, packed)*. */
const PUT_CHECKPOINT = `
local result = 1
if redis.call('HEXISTS', M, 'ix') == 0 then
  if ARGV[1] == 'check' then return 0 end
  redis.call('HSET', M, 'ix', ARGV[2])
elseif ARGV[1] == 'mark' and redis.call('HGET', M, 'ix') ~= ARGV[2] then
  result = 2
end
local ns, id = ARGV[4], ARGV[5]
local i = 7
for _ = 1, tonumber(ARGV[i]) do putChunk(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]); i = i + 3 end
i = i + 1
local b = bKey(ns)
for _ = 1, tonumber(ARGV[i]) do
  local p = ARGV[i + 1] .. SEP .. ARGV[i + 2]
  if not exact(b, p) then redis.call('ZADD', b, 0, p .. SEP .. ARGV[i + 3]) end
  i = i + 3
end
local c = cKey(ns)
local old = redis.call('ZRANGEBYLEX', c, '[' .. id .. SEP, '(' .. id .. '\\1')
if #old > 0 then redis.call('ZREM', c, unpack(old)) end
redis.call('ZADD', c, 0, id .. SEP .. ARGV[6])
redis.call('ZADD', N, 0, ns)
refresh(tonumber(ARGV[3]))
return result
`;

/** ARGV: ttl ms, mode (upsert|ignore), ns, checkpoint id, n chunks, (hash, idx, bytes)*, n writes, (task, idx, packed)*. */
const PUT_WRITES = `
local upsert, ns, id = ARGV[2] == 'upsert', ARGV[3], ARGV[4]
local i = 5
for _ = 1, tonumber(ARGV[i]) do putChunk(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]); i = i + 3 end
i = i + 1
local w = wKey(ns)
for _ = 1, tonumber(ARGV[i]) do
  local p = id .. SEP .. ARGV[i + 1] .. SEP .. ARGV[i + 2]
  local old = redis.call('ZRANGEBYLEX', w, '[' .. p .. SEP, '(' .. p .. '\\1')
  if #old == 0 or upsert then
    if #old > 0 then redis.call('ZREM', w, unpack(old)) end
    redis.call('ZADD', w, 0, p .. SEP .. ARGV[i + 3])
  end
  i = i + 3
end
redis.call('ZADD', N, 0, ns)
refresh(tonumber(ARGV[1]))
return 1
`;

/** ARGV: ns, checkpoint id ('' for the newest). Returns {indexed, {record, blobs, writes}?, chunks?}. */
const GET_CHECKPOINT = `
local ns, id = ARGV[1], ARGV[2]
local c = cKey(ns)
local m
if id == '' then m = redis.call('ZREVRANGEBYLEX', c, '+', '-', 'LIMIT', 0, 1)[1] else m = exact(c, id) end
local indexed = redis.call('HEXISTS', M, 'ix')
if not m then return {indexed} end
local hashes = {}
local item = readCheckpoint(ns, m, hashes)
return {indexed, item, chunks(hashes)}
`;

/**
 * ARGV: mode (one|all), ns to start at, exclusive (0|1), checkpoint id to continue below ('' for the
 * top), before ('' for none), only this checkpoint id ('' for any), page size, page bytes, scan
 * budget, then filter pairs (key as JSON text, value as canonical JSON text or '' for "absent").
 * Returns {done, ns, exclusive, continue below, {{ns, {record, blobs, writes}}...}, chunks}.
 */
const LIST = `
local mode, startNs, excl, below, before, only = ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4], ARGV[5], ARGV[6]
local pageSize, pageBytes, budget = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local filter = {}
for i = 10, #ARGV, 2 do filter[#filter + 1] = {ARGV[i], ARGV[i + 1]} end
local function matches(h)
  if #filter == 0 then return true end
  local md = {}
  local mk = h.mk or {}
  for i = 1, #mk, 2 do md[mk[i]] = mk[i + 1] end
  for _, f in ipairs(filter) do
    local v = md[f[1]]
    if f[2] == '' then if v ~= nil then return false end elseif v ~= f[2] then return false end
  end
  return true
end
local items, hashes, bytes, scanned = {}, {}, 0, 0
local function finish(done, ns, ex, cont) return {done, ns, ex, cont, items, chunks(hashes)} end
local NSPAGE = 100
local nss
if mode == 'one' then nss = {startNs}
else
  local min = '-'
  if excl then min = '(' .. startNs elseif startNs ~= '' then min = '[' .. startNs end
  nss = redis.call('ZRANGEBYLEX', N, min, '+', 'LIMIT', 0, NSPAGE)
end
for n, ns in ipairs(nss) do
  local c = cKey(ns)
  local max = '+'
  if n == 1 and below ~= '' then max = '(' .. below .. SEP elseif before ~= '' then max = '(' .. before .. SEP end
  while true do
    local batch
    if only ~= '' then batch = {exact(c, only)} else batch = redis.call('ZREVRANGEBYLEX', c, max, '-', 'LIMIT', 0, 32) end
    for _, m in ipairs(batch) do
      scanned = scanned + 1
      local id, h = record(m)
      if matches(h) then
        local item = readCheckpoint(ns, m, hashes)
        bytes = bytes + #m
        for _, x in ipairs(item[2]) do bytes = bytes + #x end
        for _, x in ipairs(item[3]) do bytes = bytes + #x end
        items[#items + 1] = {ns, item}
      end
      if only == '' and (#items >= pageSize or bytes >= pageBytes or scanned >= budget) then return finish(0, ns, '0', id) end
      max = '(' .. id .. SEP
    end
    if only ~= '' or #batch < 32 then break end
  end
  if #items >= pageSize and n < #nss then return finish(0, nss[n + 1], '0', '') end
end
if mode == 'all' and #nss == NSPAGE then return finish(0, nss[#nss], '1', '') end
return finish(1, '', '0', '')
`;

/**
 * ARGV: ns, checkpoint id, channels... Walks the parent chain from the checkpoint's parent until every
 * channel has a non-empty blob at its version. Returns {{{id, header, blobs, writes}...}, chunks}.
 */
const GET_HISTORY = `
local ns, id = ARGV[1], ARGV[2]
local c, b, w = cKey(ns), bKey(ns), wKey(ns)
local wanted, unseeded, left = {}, {}, 0
for i = 3, #ARGV do
  if not wanted[ARGV[i]] then wanted[ARGV[i]] = true; unseeded[ARGV[i]] = true; left = left + 1 end
end
local out, hashes, seen = {}, {}, {}
local first = exact(c, id)
if not first then return {out, {}} end
local _, h = record(first)
local cur = h.p
while cur and left > 0 and not seen[cur] do
  seen[cur] = true
  local m = exact(c, cur)
  if not m then break end
  local aid, ah, text = record(m)
  local blobs, writes = {}, {}
  local roots = ah.dr or {}
  for ch, _ in pairs(wanted) do
    local ver = ah.v[ch]
    if ver then
      for _, x in ipairs(blobsOf(b, ch, ver, roots[ch])) do
        blobs[#blobs + 1] = x
        local s2 = after(x, 2)
        local hfrom = refs(x, s2, hashes)
        if unseeded[ch] and string.sub(x, after(x, 1), s2 - 2) == ver and cjson.decode(headerAt(x, hfrom)).t ~= 'empty' then
          unseeded[ch] = nil; left = left - 1
        end
      end
    end
  end
  for _, x in ipairs(redis.call('ZRANGEBYLEX', w, '[' .. aid .. SEP, '(' .. aid .. '\\1')) do
    local hfrom = refs(x, after(x, 3), {})
    if wanted[cjson.decode(headerAt(x, hfrom)).ch] then
      writes[#writes + 1] = x
      refs(x, after(x, 3), hashes)
    end
  end
  out[#out + 1] = {aid, text, blobs, writes}
  cur = ah.p
end
return {out, chunks(hashes)}
`;

/** ARGV: ns, (channel, version)*. */
const GET_BLOBS = `
local b = bKey(ARGV[1])
local out = {}
for i = 2, #ARGV, 2 do
  local x = exact(b, ARGV[i] .. SEP .. ARGV[i + 1])
  if x then out[#out + 1] = x end
end
return out
`;

/** ARGV: hashes. */
const GET_CHUNKS = `
local hashes = {}
for i = 1, #ARGV do hashes[#hashes + 1] = ARGV[i] end
return chunks(hashes)
`;

/** Deletes every key of the thread; returns its index token (or false). */
const DELETE_THREAD = `
local token = redis.call('HGET', M, 'ix')
local keys = {M, N, K}
for _, ns in ipairs(redis.call('ZRANGE', N, 0, -1)) do
  keys[#keys + 1] = cKey(ns); keys[#keys + 1] = bKey(ns); keys[#keys + 1] = wKey(ns)
end
for i = 1, #keys, 500 do redis.call('DEL', unpack(keys, i, math.min(#keys, i + 499))) end
return token
`;

/** ARGV: token. Whether the thread exists with this index token (1), exists with another (2), or not at all (0). */
const INDEX_STATE = `
local token = redis.call('HGET', M, 'ix')
if not token then return 0 end
if token == ARGV[1] then return 1 end
return 2
`;

function script(name: string, body: string): LuaScript {
  const lua = `${COMMON}\n${body}`;
  return { name, lua, sha: createHash("sha1").update(lua).digest("hex") };
}

/** Every script the store runs, by what it does. */
export const SCRIPTS = {
  putCheckpoint: script("putCheckpoint", PUT_CHECKPOINT),
  putWrites: script("putWrites", PUT_WRITES),
  getCheckpoint: script("getCheckpoint", GET_CHECKPOINT),
  list: script("listCheckpoints", LIST),
  getHistory: script("getHistory", GET_HISTORY),
  getBlobs: script("getBlobs", GET_BLOBS),
  getChunks: script("getChunks", GET_CHUNKS),
  deleteThread: script("deleteThread", DELETE_THREAD),
  indexState: script("indexState", INDEX_STATE),
} as const;
