-- A small Kubernetes API client over fluence.kube (core/kube.c), which
-- resolves the kubeconfig and keeps every credential in C memory.
--
--   local client = kubeclient.new{ kubeconfig =, context =, namespace =,
--                                  timeout = 30, connect_timeout = 10 }
--   client.namespace, client.context, client.server, client.user, client.auth
--   client:request(method, path, body, content_type, query) -> status, decoded
--       body: a string (sent as is) or a table (JSON-encoded); query: {k = v}
--       raises CLUSTER errors (exit 4) for network failures and HTTP >= 400,
--       with the server's Status.message; the error carries .status, .reason.
--   kubeclient.request_many{ {client, method, path [, body, content_type, query]}, ... }
--       -> { {status =, body = decoded, headers =} | {error = <CLUSTER error>}, ... }
--       every request at once (one curl multi across clusters), with the
--       same retries and messages as client:request
--   client:resource(apiVersion, kind) -> {group=, version=, resource=, namespaced=}
--   client:path(apiVersion, kind, namespace, name) -> "/apis/.../name"
--   kubeclient.check_ref(apiVersion, kind [, name [, namespace]]) -> nil | why
--       (resource and path raise an INPUT error with it, before any request)
--
-- Kinds map to resources through a built-in table, else discovery
-- (GET /api/v1, /apis/GROUP/VERSION), cached per client.
local kube = require "fluence.kube"
local json = require "fluence.json"
local errors = require "fluence.errors"
local sys = require "fluence.sys"
local http = require "fluence.http"
local retry = require "fluence.retry"

local M = {}

-- 429 Too Many Requests is asked again, waiting Retry-After (default 1 s,
-- capped), at most MAX_RETRIES times, and only while the whole request -
-- every attempt and every wait - stays within its timeout
-- (--request-timeout, retry.lua): a server answering 429 forever costs one
-- timeout, not several.
M.MAX_RETRIES = 5
M.MAX_RETRY_AFTER = 10     -- seconds: a longer Retry-After is capped

-- group -> kind -> {resource, namespaced}; any version of the group.
local BUILTIN = {
  [""] = {
    Pod = { "pods", true }, ConfigMap = { "configmaps", true }, Secret = { "secrets", true },
    Service = { "services", true }, ServiceAccount = { "serviceaccounts", true },
    PodTemplate = { "podtemplates", true }, Endpoints = { "endpoints", true },
    PersistentVolumeClaim = { "persistentvolumeclaims", true }, LimitRange = { "limitranges", true },
    ResourceQuota = { "resourcequotas", true }, ReplicationController = { "replicationcontrollers", true },
    Event = { "events", true },
    Namespace = { "namespaces", false }, Node = { "nodes", false },
    PersistentVolume = { "persistentvolumes", false },
  },
  batch = { Job = { "jobs", true }, CronJob = { "cronjobs", true } },
  apps = {
    Deployment = { "deployments", true }, StatefulSet = { "statefulsets", true },
    ReplicaSet = { "replicasets", true }, DaemonSet = { "daemonsets", true },
    ControllerRevision = { "controllerrevisions", true },
  },
  ["rbac.authorization.k8s.io"] = {
    Role = { "roles", true }, RoleBinding = { "rolebindings", true },
    ClusterRole = { "clusterroles", false }, ClusterRoleBinding = { "clusterrolebindings", false },
  },
  policy = { PodDisruptionBudget = { "poddisruptionbudgets", true } },
  ["networking.k8s.io"] = { Ingress = { "ingresses", true }, NetworkPolicy = { "networkpolicies", true },
                            IngressClass = { "ingressclasses", false } },
  autoscaling = { HorizontalPodAutoscaler = { "horizontalpodautoscalers", true } },
  ["scheduling.k8s.io"] = { PriorityClass = { "priorityclasses", false } },
  ["storage.k8s.io"] = { StorageClass = { "storageclasses", false } },
  ["apiextensions.k8s.io"] = { CustomResourceDefinition = { "customresourcedefinitions", false } },
  ["coordination.k8s.io"] = { Lease = { "leases", true } },
}
M.BUILTIN = BUILTIN

local REASONS = {
  [400] = "Bad Request", [401] = "Unauthorized", [403] = "Forbidden", [404] = "Not Found",
  [405] = "Method Not Allowed", [409] = "Conflict", [410] = "Gone", [413] = "Request Entity Too Large",
  [415] = "Unsupported Media Type", [422] = "Unprocessable Entity", [429] = "Too Many Requests",
  [500] = "Internal Server Error", [502] = "Bad Gateway", [503] = "Service Unavailable",
  [504] = "Gateway Timeout",
}

local function cluster_error(msg, extra)
  local e = errors.new("CLUSTER", msg)
  for k, v in pairs(extra or {}) do e[k] = v end
  error(e, 0)
end

local function urlencode(s)
  return (tostring(s):gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end))
end

local function query_string(q)
  if not q then return "" end
  local keys = {}
  for k in pairs(q) do keys[#keys + 1] = k end
  if #keys == 0 then return "" end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = urlencode(k) .. "=" .. urlencode(q[k]) end
  return "?" .. table.concat(parts, "&")
end
M.query_string = query_string

-- --request-timeout (retry.lua: the one retry policy)
M.parse_timeout = retry.parse_timeout

local Client = {}
Client.__index = Client

function M.new(o)
  o = o or {}
  local timeout, given = M.parse_timeout(o.timeout)
  -- an exec credential plugin gets --request-timeout when one is given
  -- (else kube.load's own limit, 60 s: a login may take a while)
  local ok, cfg = pcall(kube.load, { kubeconfig = o.kubeconfig, context = o.context, namespace = o.namespace,
                                     exec_timeout = given and timeout or nil })
  if not ok then
    if errors.is(cfg) then error(cfg, 0) end
    cluster_error("cluster: " .. tostring(cfg))
  end
  local info = cfg:info()
  return setmetatable({
    cfg = cfg, info = info, namespace = info.namespace, context = info.context,
    server = info.server, user = info.user, auth = info.auth,
    timeout = timeout, connect_timeout = math.min(tonumber(o.connect_timeout) or 10, timeout),
    discovery = {},
  }, Client)
end

-- The user-facing message of a failed answer: the server's Status.message
-- when there is one, with the HTTP code, and a hint for 401.
local function failure(self, method, path, r, decoded)
  local code = r.status
  local msg, reason
  if type(decoded) == "table" and decoded.kind == "Status" then
    msg, reason = decoded.message, decoded.reason
    if type(decoded.details) == "table" and type(decoded.details.causes) == "table" then
      local extra = {}
      for _, c in ipairs(decoded.details.causes) do
        if type(c) == "table" and c.message and not tostring(msg):find(c.message, 1, true) then
          extra[#extra + 1] = (c.field and (c.field .. ": ") or "") .. tostring(c.message)
        end
      end
      if #extra > 0 then msg = msg .. " (" .. table.concat(extra, "; ") .. ")" end
    end
  end
  local p = path:gsub("%?.*", "")
  if msg ~= nil then msg = sys.escape(tostring(msg)) end      -- the server's words: one line
  if not msg or msg == "" then
    local body = sys.escape((r.body or ""):gsub("%s+", " "):sub(1, 200))
    msg = ("%s %s%s: %s"):format(method, self.server, p, body ~= "" and body or (REASONS[code] or "error"))
  end
  local text = ("cluster: %s (HTTP %d %s)"):format(msg, code, REASONS[code] or "")
  text = text:gsub(" %)$", ")")
  if r.gave_up then text = text .. "; " .. r.gave_up end
  if code == 401 then
    text = text .. ("; the server rejected the credentials of user %s (context %s, %s)")
      :format(sys.quote(self.user or ""), sys.quote(self.context or ""), self.auth or "none")
  end
  cluster_error(text, { status = code, reason = reason, server_message = msg, body = decoded })
end

-- The request table for fluence.kube (body JSON-encoded when a table).
local function raw_request(self, method, path, body, content_type, query)
  if type(body) == "table" then
    body = json.encode(body)
    content_type = content_type or "application/json"
  end
  return { method = method, path = path .. query_string(query), body = body, content_type = content_type,
           timeout = self.timeout, connect_timeout = self.connect_timeout }
end

-- An answer below 400 that no API server gives, named for what it is: a
-- redirect (never followed: it would take the credentials elsewhere), or a
-- page that is not JSON (a proxy's login page, a web server where the API
-- server should be).  Raises the CLUSTER error; nothing for a JSON answer.
local function check_kind(self, method, path, r)
  local where = ("%s %s%s"):format(method, self.server or "", (path:gsub("%?.*", "")))
  if r.status >= 300 and r.status < 400 then
    local to = r.headers and r.headers.location
    cluster_error(("cluster: %s: %s"):format(where, to and ("redirected to %s (not followed)"):format(
                    sys.quote(http.url_shown(to))) or ("HTTP %d without a Location"):format(r.status)),
                  { status = r.status })
  end
  local ctype = tostring(r.headers and r.headers["content-type"] or ""):match("^%s*([^;%s]+)")
  ctype = ctype and ctype:lower()
  if r.body ~= "" and ctype and ctype ~= "application/json" and not ctype:match("%+json$") then
    cluster_error(("cluster: %s: answered %s, not JSON (HTTP %d)"):format(where, sys.escape(ctype), r.status),
                  { status = r.status })
  end
end

-- req's time for its next attempt: what is left of the request's budget.
local function with_time_left(self, req, budget)
  req.timeout = budget:attempt()
  req.connect_timeout = math.min(self.connect_timeout, req.timeout)
  return req
end

-- One raw answer (or transport error) -> "retry", seconds | status, decoded,
-- headers; raises the CLUSTER error a failure is.
local function answer(self, method, path, r, err, tries, budget)
  if r then
    require("fluence.log").v(2, "HTTP %s %s%s -> %d (%.0f ms)", method, self.server or "", path,
                             r.status, (r.time or 0) * 1000)
  end
  if not r then
    cluster_error(("cluster: %s (context %s)"):format(err, sys.quote(self.context or "")), { network = true })
  end
  if r.status == 429 then
    local wait = retry.after(r.headers["retry-after"], M.MAX_RETRY_AFTER)
    r.gave_up = budget:gave_up(tries + 1, M.MAX_RETRIES + 1, wait)
    if not r.gave_up then return "retry", wait end
  end
  if r.status < 400 then check_kind(self, method, path, r) end
  local decoded
  if r.body ~= "" then decoded = json.decode(r.body) end
  if r.status >= 400 then failure(self, method, path, r, decoded) end
  if r.body ~= "" and decoded == nil then
    cluster_error(("cluster: %s %s%s: the answer is not JSON"):format(method, self.server, path))
  end
  return r.status, decoded, r.headers
end

-- One request to completion: attempts (429 asked again) within the deadline.
-- text: a successful answer's body as text, not decoded.
local function perform(self, method, path, req, text)
  local budget, tries = retry.budget(self.timeout), 0
  while true do
    local r, err = self.cfg:request(with_time_left(self, req, budget))
    if text and r and r.status < 400 and r.status ~= 429 then
      require("fluence.log").v(2, "HTTP %s %s%s -> %d (%.0f ms)", method, self.server or "", path,
                               r.status, (r.time or 0) * 1000)
      check_kind(self, method, path, r)
      return r.status, r.body, r.headers
    end
    local status, decoded, headers = answer(self, method, path, r, err, tries, budget)
    if status ~= "retry" then return status, decoded, headers end
    tries = tries + 1
    kube.sleep(decoded)
  end
end

function Client:request(method, path, body, content_type, query)
  return perform(self, method, path, raw_request(self, method, path, body, content_type, query))
end

-- Like request, but the answer's body is returned as text, not decoded
-- (fluence.kubelists reads large lists straight from it).
function Client:request_text(method, path, query)
  return perform(self, method, path, raw_request(self, method, path, nil, nil, query), true)
end

-- items: { {client, method, path, body, content_type, query, text = bool,
--            max_body = bytes}, ... }
-- (text: keep the body as text; max_body: refuse a larger answer).  Each result is {status =, body =, headers =}
-- or {error = <CLUSTER error>}; answers of 429 are asked again (all of them
-- after the longest Retry-After), as client:request does: each item within
-- its own client's timeout, counted from the first attempt.
function M.request_many(items)
  local results, pending, tries, budgets = {}, {}, {}, {}
  for i = 1, #items do
    pending[#pending + 1] = i
    tries[i] = 0
    budgets[i] = retry.budget(items[i][1].timeout)
  end
  while #pending > 0 do
    local batch = {}
    for k, i in ipairs(pending) do
      local it = items[i]
      local req = raw_request(it[1], it[2], it[3], it[4], it[5], it[6])
      req.max_body = it.max_body
      batch[k] = { it[1].cfg, with_time_left(it[1], req, budgets[i]) }
    end
    local answers = kube.request_many(batch)
    local again, wait = {}, 0
    for k, i in ipairs(pending) do
      local it, r = items[i], answers[k]
      local ok, status, body, headers
      if it.text and r.status and r.status < 400 and r.status ~= 429 then
        require("fluence.log").v(2, "HTTP %s %s%s -> %d (%.0f ms)", it[2], it[1].server or "", it[3],
                                 r.status, (r.time or 0) * 1000)
        ok, status = pcall(check_kind, it[1], it[2], it[3], r)
        if ok then status, body, headers = r.status, r.body, r.headers end
      else
        ok, status, body, headers = pcall(answer, it[1], it[2], it[3], r.status and r or nil, r.error, tries[i],
                                          budgets[i])
      end
      if not ok then
        results[i] = { error = errors.is(status) and status or errors.new("CLUSTER", tostring(status)) }
      elseif status == "retry" then
        tries[i] = tries[i] + 1
        again[#again + 1] = i
        wait = math.max(wait, body)
      else
        results[i] = { status = status, body = body, headers = headers }
      end
    end
    pending = again
    if #pending > 0 then kube.sleep(wait) end
  end
  return results
end

local function split_api_version(av)
  local g, v = tostring(av or ""):match("^([^/]+)/([^/]+)$")
  if g then return g, v end
  return "", av
end
M.split_api_version = split_api_version

-- ------------------------------------------------ names that become paths
-- An object's apiVersion, kind, namespace and name become the path of a
-- request: they are checked against what Kubernetes allows before any
-- request is made, so that apiVersion "../../api/v1/namespaces/kube-system/
-- secrets/victim#" cannot send a PATCH (or a discovery GET) elsewhere.

-- a DNS-1123 label (namespaces, each part of a group): [a-z0-9-], 63 at
-- most, starting and ending with a letter or digit
local function dns1123_label(s)
  return #s >= 1 and #s <= 63 and s:match("^[a-z0-9][-a-z0-9]*$") ~= nil and s:sub(-1):match("[a-z0-9]") ~= nil
end

-- a DNS-1123 subdomain (API groups): labels joined by ".", 253 at most
local function dns1123_subdomain(s)
  if #s < 1 or #s > 253 then return false end
  for label in (s .. "."):gmatch("([^.]*)%.") do
    if not dns1123_label(label) then return false end
  end
  return true
end

-- a DNS-1035 label (versions; kinds, lowercased): as 1123, starting with a letter
local function dns1035_label(s)
  return dns1123_label(s) and s:match("^[a-z]") ~= nil
end

-- a value as a message shows it: quoted as Go's %q (it came from a file),
-- a long one by its start
local function shown(v)
  return sys.quote(errors.brief(v))
end

-- nil, or why the object reference cannot be made a request path.  name and
-- namespace are optional (a collection, a cluster-scoped kind).
function M.check_ref(api_version, kind, name, namespace)
  if type(api_version) ~= "string" or api_version == "" or type(kind) ~= "string" or kind == "" then
    return "object without apiVersion or kind"
  end
  local group, version = api_version:match("^([^/]*)/([^/]*)$")
  if not group then
    if api_version:find("/", 1, true) then
      return ("apiVersion %s is not GROUP/VERSION or VERSION"):format(shown(api_version))
    end
    version = api_version
  elseif not dns1123_subdomain(group) then
    return ("apiVersion %s: the group %s is not a DNS subdomain (lowercase letters, digits, '-' and '.')")
      :format(shown(api_version), shown(group))
  end
  if not dns1035_label(version) then
    return ("apiVersion %s: the version %s is not a DNS label (lowercase letters, digits and '-', " ..
            "starting with a letter)"):format(shown(api_version), shown(version))
  end
  if #kind > 63 or not kind:match("^[A-Za-z][-A-Za-z0-9]*$") or kind:sub(-1) == "-" then
    return ("kind %s is not a kind (letters, digits and '-', starting with a letter)"):format(shown(kind))
  end
  if namespace ~= nil and (type(namespace) ~= "string" or not dns1123_label(namespace)) then
    return ("metadata.namespace %s is not a namespace name (a DNS label)"):format(shown(namespace))
  end
  if name ~= nil then
    -- what the API server refuses in any name that is a path segment
    if type(name) ~= "string" or name == "" or name == "." or name == ".." or name:find("[/%%]") then
      return ("metadata.name %s cannot be a name (not empty, \".\" or \"..\", no '/' or '%%')"):format(shown(name))
    end
  end
end

local function check_ref(...)
  local why = M.check_ref(...)
  if why then errors.raise("INPUT", "%s", why) end
end

-- {group, version, resource, namespaced} for a kind, or raises.
function Client:resource(api_version, kind)
  check_ref(api_version, kind)
  local group, version = split_api_version(api_version)
  local b = BUILTIN[group] and BUILTIN[group][kind]
  if b then return { group = group, version = version, resource = b[1], namespaced = b[2] } end
  local gv = group == "" and version or (group .. "/" .. version)
  local list = self.discovery[gv]
  if list == nil then
    local path = group == "" and ("/api/" .. version) or ("/apis/" .. group .. "/" .. version)
    local ok, st, doc = pcall(self.request, self, "GET", path)
    if not ok then
      if errors.is(st) and st.status == 404 then
        cluster_error(("cluster: the server does not serve %s (no resource for kind %s)"):format(gv, kind))
      end
      error(st, 0)
    end
    list = type(doc) == "table" and doc.resources or {}
    self.discovery[gv] = list
  end
  for _, r in ipairs(list) do
    -- a resource name from the server goes into paths too: a plain segment
    if r.kind == kind and type(r.name) == "string" and r.name ~= "" and r.name ~= "." and r.name ~= ".."
       and not r.name:find("[/%%?#]") then
      return { group = group, version = version, resource = r.name, namespaced = r.namespaced and true or false }
    end
  end
  cluster_error(("cluster: the server has no resource for kind %s in %s"):format(kind, gv))
end

-- The collection path (name nil) or the object path.
function Client:path(api_version, kind, namespace, name)
  check_ref(api_version, kind, name, namespace)
  local r = self:resource(api_version, kind)
  local base = r.group == "" and ("/api/" .. r.version) or ("/apis/" .. r.group .. "/" .. r.version)
  if r.namespaced then base = base .. "/namespaces/" .. urlencode(namespace or self.namespace) end
  base = base .. "/" .. r.resource
  if name then base = base .. "/" .. urlencode(name) end
  return base, r
end

return M
