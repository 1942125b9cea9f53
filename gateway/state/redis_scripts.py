"""The Redis store's Lua scripts (gateway/state/redis.py): every step that reads and then
writes runs as one script, so that replicas never interleave inside it. ``SHAS``: each
script's SHA1, for EVALSHA.
"""

from __future__ import annotations

from .resp import sha1

# KEYS[1], KEYS[2]: claims, claimv. The held value, or false once claimed now. ``attempt``
# ('' for none), fresh for each claim, is kept beside the value (field NUL + key): a claim that
# holds it is this claim sent again after a dropped connection (gateway/state/resp.py).
CLAIM_FN = """
local function claim(key, value, now, ttl, max, attempt)
  local expiry = redis.call('ZSCORE', KEYS[1], key)
  if expiry and tonumber(expiry) > now then
    if attempt ~= '' and redis.call('HGET', KEYS[2], '\\0' .. key) == attempt then
      return false
    end
    return redis.call('HGET', KEYS[2], key)
  end
  redis.call('ZADD', KEYS[1], now + ttl, key)
  redis.call('HSET', KEYS[2], key, value)
  if attempt ~= '' then redis.call('HSET', KEYS[2], '\\0' .. key, attempt) end
  local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 64)
  local extra = redis.call('ZCARD', KEYS[1]) - #old - max
  if extra > 0 then
    for _, k in ipairs(redis.call('ZRANGE', KEYS[1], #old, #old + extra - 1)) do
      table.insert(old, k)
    end
  end
  for _, k in ipairs(old) do
    redis.call('ZREM', KEYS[1], k)
    redis.call('HDEL', KEYS[2], k, '\\0' .. k)
  end
  return false
end
"""

# ARGV: key, value, now, ttl, max claims, attempt
CLAIM = (
    CLAIM_FN
    + "return claim(ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), "
    + "ARGV[6])"
)

# KEYS: claims, claimv. ARGV: key, now. The value held, or false.
RECALL = """
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) <= tonumber(ARGV[2]) then return false end
return redis.call('HGET', KEYS[2], ARGV[1])
"""

FORGET = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1], '\\0' .. ARGV[1])
return 1
"""

PUT_CLAIM = """
redis.call('ZADD', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
"""

# KEYS: claims, claimv, j, jseq, jseqn, jc:<conversation>
# ARGV: claim key ('' for none), now, ttl, max claims, id, entry, claim value. The entry's id
# is fresh for each append: one already journaled is this append sent again after a dropped
# connection (gateway/state/resp.py), whose claim is its own: its seq, not a redelivery.
APPEND = (
    CLAIM_FN
    + """
local written = redis.call('ZSCORE', KEYS[4], ARGV[5])
if written then return tonumber(written) end
if ARGV[1] ~= '' and claim(ARGV[1], ARGV[7], tonumber(ARGV[2]), tonumber(ARGV[3]),
                           tonumber(ARGV[4]), '') then
  return false
end
local seq = redis.call('INCR', KEYS[5])
redis.call('HSET', KEYS[3], ARGV[5], ARGV[6])
redis.call('ZADD', KEYS[4], seq, ARGV[5])
redis.call('ZADD', KEYS[6], seq, ARGV[5])
return seq
"""
)

# KEYS: j, js, the fencing lease (or any key). ARGV: id, status, the lease's value ('': none)
UPDATE = """
if ARGV[3] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[3] then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1
"""

# A lease let go if it is still this holder's. KEYS[1]: lease:<name>. ARGV[1]: its value.
_LET_GO = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
"""

# An entry dropped: its keys are the last four, j, js, jseq, jc:<conversation>; its id the last
# argument (so that RELEASE_FINISHED is the lease's release and this).
_DROP = """
local o, id = #KEYS - 4, ARGV[#ARGV]
redis.call('HDEL', KEYS[o + 1], id)
redis.call('HDEL', KEYS[o + 2], id)
redis.call('ZREM', KEYS[o + 3], id)
redis.call('ZREM', KEYS[o + 4], id)
return 1
"""

# KEYS: j, js, jseq, jc:<conversation>. ARGV: id
FINISH = _DROP

# KEYS: lease:<name>, j, js, jseq, jc:<conversation>. ARGV: the lease's value, id
RELEASE_FINISHED = _LET_GO + _DROP

# KEYS: jseq or jc:<conversation>, j, js. Seq, entry and status ('' for none) of each entry.
PENDING = """
local ranked = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local found = {}
for i = 1, #ranked, 2 do
  local entry = redis.call('HGET', KEYS[2], ranked[i])
  if entry then
    table.insert(found, ranked[i + 1])
    table.insert(found, entry)
    table.insert(found, redis.call('HGET', KEYS[3], ranked[i]) or '')
  end
end
return found
"""

# KEYS[1], KEYS[2]: lease:<name>, leasen. The fencing token, or false while another holds it.
ACQUIRE_FN = """
local function acquire(owner, ttl)
  local held = redis.call('GET', KEYS[1])
  if held then
    local token, holder = string.match(held, '^(%d+)|(.*)$')
    if holder ~= owner then return false end
    redis.call('PEXPIRE', KEYS[1], ttl)
    return tonumber(token)
  end
  local token = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], token .. '|' .. owner, 'PX', ttl)
  return token
end
"""

ACQUIRE = ACQUIRE_FN + "return acquire(ARGV[1], ARGV[2])"

# KEYS: lease:<name>, leasen, jc:<conversation>, j, js. ARGV: owner, ttl ms, seq ('': any
# order), the running entry's id ('': none) and its status
TURN = (
    ACQUIRE_FN
    + """
if ARGV[3] ~= '' then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if first[2] and tonumber(first[2]) < tonumber(ARGV[3]) then return false end
end
local token = acquire(ARGV[1], ARGV[2])
if token and ARGV[4] ~= '' and redis.call('HEXISTS', KEYS[4], ARGV[4]) == 1 then
  redis.call('HSET', KEYS[5], ARGV[4], ARGV[5])
end
return token
"""
)

RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

RELEASE = _LET_GO + "return 1\n"

SHAS = {
    script: sha1(script)
    for script in (
        CLAIM, PUT_CLAIM, RECALL, FORGET, APPEND, UPDATE, FINISH, PENDING, ACQUIRE,
        TURN, RENEW, RELEASE, RELEASE_FINISHED,
    )
}  # fmt: skip
