-- Generates the man page fluence(1) from the command-line tables in
-- core/clispec.c (the fluence.clispec module of build/lib/fluence.so) plus the
-- hand-written prose below, so verbs, options and exit codes cannot drift.
--
--   make && lua5.4 tools/gen-man.lua > docs/fluence.1
--   lua5.4 tools/gen-man.lua --date 2026-11-22 > docs/fluence.1
--
-- The date is --date, else SOURCE_DATE_EPOCH, else today (UTC); the version
-- is the file VERSION.  spec/man_spec.lua checks that docs/fluence.1
-- is what this script prints (with the page's own date) and that groff
-- renders it without warnings.
local here = (arg and arg[0] or ""):match("^(.*)/tools/[^/]*$") or "."
package.cpath = here .. "/build/lib/?.so;" .. package.cpath
local spec = require "fluence.clispec"

local date
do
  local i = 1
  while arg[i] do
    if arg[i] == "--date" then date = arg[i + 1]; i = i + 2
    else io.stderr:write("gen-man.lua: unknown argument ", arg[i], "\n"); os.exit(2) end
  end
end
if not date then
  local sde = tonumber(os.getenv("SOURCE_DATE_EPOCH") or "")
  date = os.date("!%Y-%m-%d", sde and math.floor(sde) or os.time())
end

local version = "unknown"
do
  local f = io.open(here .. "/VERSION")   -- the version's one place
  if f then
    version = f:read("l") or version
    f:close()
  end
end

-- roff escaping for running text: backslashes, and a line must not start
-- with a control character.
local function esc(s)
  s = s:gsub("\\", "\\e")
  s = s:gsub("\n([.'])", "\n\\&%1")
  if s:match("^[.']") then s = "\\&" .. s end
  return s
end
-- An option or command word: every hyphen is a minus sign (copy-pasteable).
local function opt(s) return (s:gsub("\\", "\\e"):gsub("%-", "\\-")) end

local out = {}
local function add(s) out[#out + 1] = s end

-- Hand-written prose per verb, after its one-line summary from the table.
local VERB_PROSE = {
  select = [[Reads every manifest given with -f, finds the Fluence objects (those with a
select-policy annotation, on the object or on its pod template, and a pod template
or pod scheduled by Fluence; the object's annotation wins over the template's), gathers
candidate backends from the providers, keeps those the cluster offers, runs the
policy pipeline and writes the chosen backend into the object's
require-backend annotation and into every Fluence pod (its template's metadata, an
Argo Workflow's spec.podMetadata, a MiniCluster's spec.pod: the kinds are listed in
docs/kubernetes.md; other kinds' pod templates are found by shape), with an audit in
select-result.  Every other byte of the input is kept.  Output goes to stdout only
when every object succeeded; stderr carries one "selected backend" line per object,
"dropped" lines with reasons, notes, and warnings: a schedulerName: fluence where no
pod fluence can pin is, a key written twice outside Fluence objects (passed through;
in a Fluence object it is an error).]],
  apply = [[Selects for every object first (all or nothing), then applies each object with
server-side apply (field manager kubectl-fluence unless --field-manager).  With
--dry-run=client it only prints; with --dry-run=server the API server validates
without persisting.]],
  create = [[Like apply, but creates every object and fails for one that already exists.]],
  run = [[POLICY.lua runs in the policy sandbox and returns a select-policy string, a
function (backends, request) returning the backends best first, or a table
{ pipeline = ..., providers = {...} }.  It decides for every Fluence object in
the input, whether or not the object has a select-policy annotation.]],
  explain = [[Prints, per Fluence object, a table with one row per backend: the attributes the
pipeline reads (and the provider of each) and one column per stage: kept with
its rank, or dropped and why.  Exits 1 when a selection fails; the table still
shows why.  Coloured when stdout is a terminal and NO_COLOR is not set.]],
  fn = [[A KRM function (the KRM Functions Specification): reads a ResourceList
(config.kubernetes.io/v1) on stdin and writes it to stdout with the items select
would pin pinned (every other byte kept, config.kubernetes.io annotations
included) and one entry in results per selection, note and failure.  Options
come from the command line and from the functionConfig, which wins: a
ConfigMap whose data keys are the long option names (kpt fn eval DIR --exec
"fluence fn" -- attributes=attrs.yaml offline=true), or a FluenceSelect
(fluence.flux-framework.org/v1alpha1) with the same keys under spec, where
attributes may be written inline.  fn CONFIG reads the functionConfig from a
file; with a plain stream of objects on stdin (kustomize's exec plugins) it
answers as select -f - would.  Exits 1 with the ResourceList and its error
results when a selection fails, 3 for a bad functionConfig.  See
docs/gitops.md.]],
  match = [[Reads resource-query commands on stdin (match allocate FILE, match
allocate_orelse_reserve FILE, match allocate_with_satisfiability FILE, match
satisfiability FILE, cancel N [stats], info N, quit) or takes jobspec files as
arguments, and matches them against the JGF resource graph given with --graph,
the way Fluxion v0.54 would: jobspecs read as Fluxion reads them, the same job
ids, and what resource-query writes to its -t file on stdout, what it prints
besides (errors, info lines) on stderr.]],
  jobspec = [[Prints the compute jobspec and one device jobspec per virtual resource type that
Fluence builds for each group in the manifests.]],
  graph = [[Reads the cluster's nodes (allocatable, else capacity: cores, memory in MB,
nvidia.com/gpu; cordoned and control-plane nodes left out) and the
fluence-resources offerings, and prints the resource graph Fluence builds from
them: what fits matches against.  --now takes away the requests of the pods bound
to each node and not finished.  With several --context, one graph per cluster.]],
  policies = [[Lists every policy plugin on the search path: name, origin and description,
then the search order.  -o name prints one name per line; -o json for scripts.]],
  providers = [[Lists every provider plugin on the search path, like policies.]],
  prices = [[Asks the price providers (azure-prices, aws-prices, gcp-prices) for every
--instance-type in every --region of --cloud, or for the backends of --attributes
files that carry cloud, instance_type and region, and prints one row each: the
on-demand and spot price, their unit (USD/hour; USD/GPU-hour for GCP, whose GPU
price excludes the host VM), the spot zone, the age of the price and the provider.
Notes on stderr say why a price is missing or how old a cached one is.  The same
cache as a selection; --offline never touches the network.  See docs/pricing.md.]],
  new = [[Writes DIR/policies/NAME.lua (or DIR/providers/NAME.lua), DIR/tests/NAME_spec.lua
and DIR/tests/NAME.test.yaml: a commented plugin (a policy with an argument, or a
provider reading a JSON endpoint over HTTP) and its tests, which pass
fluence test DIR as written.  Nothing is overwritten.]],
  check = [[Recursively under each PATH (default .): compiles every Fluence object's
select-policy in manifests (unknown stages with a suggestion, located at the
annotation with a caret), loads plugin files in the sandbox and checks their
shape, and checks the syntax of specs and the format of *.test.yaml cases.  With
--attributes, a policy reading an attribute no backend has is a warning.  Never
selects and never contacts a cluster.  Exit 3 when anything is wrong (nothing on
stdout), 0 with only warnings.]],
  test = [[Runs every *_spec.lua (busted specs, with a built-in runner: describe, it,
before_each, assert ...) and *.test.yaml (declarative cases) under each PATH
(default .), in process, with HTTP, the environment and files stood in for: a
test never reaches the network.  require("fluence.testing") gives specs rank,
provider and select.  Plugins come from --policy-dir/--provider-dir, the test's
project (the nearest directory above it with policies/ or providers/) and the
usual search path.  Prints one line per failure (FILE:LINE: name: message) and
"N passed, M failed" last; exit 1 when a test fails, 3 when a test file is
malformed (located; nothing runs).  --coverage then lists, per plugin file of
the tested projects, the lines with code, the lines the tests ran and those
they missed; --coverage-min PERCENT exits 1 below that total.  See
docs/testing-plugins.md.]],
  completion = [[bash and zsh print a script to source; kubectl prints the
kubectl_complete-fluence helper that kubectl (1.26 or later) runs to complete
"kubectl fluence ...": install it executable on PATH.]],
}

-- Hand-written detail per option, after its help line from the table.
local OPTION_PROSE = {
  output = [[yaml from select, run and jobspec is the edited input, byte for byte;
json is the edited input as kubectl reads YAML and sends it (YAML 1.1 scalars: 0777
is 511, yes is true; what kubectl refuses, such as .inf or a label value 1, is an
error); from apply and create, yaml and json are the objects the server returned
(with --dry-run=client, the edited input); junit writes JUnit XML on stdout, the
failures and the summary on stderr.]],
  policy = [[All of Fluxion's: first, high, low, lonode, hinode, lonodex, hinodex,
firstnodex, locality, variation, or settings such as
"policy=low node_centric=true node_exclusive=true".]],
  format = [[Exactly what resource-query -F writes: simple, rv1, rv1_nosched or jgf
(see docs/fluxion.md).]],
  ["dry-run"] = [[Selection always runs; with client nothing is sent to the cluster, with server
the API server validates and admits the objects without persisting them
(dryRun=All).]],
  verbose = [[-v: the providers called, the offerings read, timings; each further -v adds
detail (such as HTTP status lines).  Credentials never appear.  Independently
of -v, when stderr is a terminal and a run takes over a second, one status
line shows how far it is, redrawn each second while a request to a cluster or
cloud API is outstanding ("waiting for HOST, N s"; the host only).]],
  ["cost-tol"] = [[Widens the best-equivalent group of min-cost, max-cost, min-queue and
max-queue: the backends within the band of the best value are kept.  N is an
absolute band (0.05: within 0.05 of the best), as in the Go client; N% is
relative to the best value (5%: within 5% of it), as ~5% in a policy.  A
stage's own ~N or ~N% overrides it; other rankers rank exact ties only.  A
value that is not a finite decimal number >= 0 (abc, nan, 1e400, 0x10, -1) is
a usage error (exit 2).]],
  ["request-timeout"] = [[Seconds (2.5) or a kubectl duration (30s, 1m30s, 500ms, 1h); 0 means the
default (30 s).  It bounds a whole request: its attempts after 429 Too Many
Requests (Retry-After, at most 5) and the waits between them are all within
it.  The same holds for the calls of braket-live to AWS Braket: every device's
calls, their retries and their back-off waits end within it.  When given, it
is also the time an exec credential plugin has (else 60 s); the plugin runs in
a process group of its own, killed with it at that limit and whenever the
plugin ends.  A negative or malformed value is a usage error (exit 2).]],
  recursive = [[Subdirectories are read in name order, except those whose name starts with ".".
As with kubectl, a symbolic link to a directory is not followed while
recursing (a directory given with -f may be a link), so a link to the
directory itself or a parent cannot loop; a file reached by several names
(a link to a file in the tree) is read once.]],
  offline = [[Also skips the configmap provider; the selection uses only --attributes files
and named providers.]],
  ["plugin-timeout"] = [[Every call into a plugin (loading it, a policy's compile and each stage, a
provider's candidates, a fluence run function) must end within this wall-clock
time, including time spent in C on its behalf (string patterns, table
operations); time a provider waits on the network is bounded by the request's
own timeout and not counted.  A call past its limit stops the run with exit
code 3, naming the plugin, its file and line, and what it was doing; a call
stuck in C that cannot be interrupted ends the process one second later.
Default 5; 0 means no limit; else FLUENCE_PLUGIN_TIMEOUT.]],
}

local function verbs_of(o)
  if #o.verbs == #spec.verbs then return "all verbs" end
  local v = {}
  for _, n in ipairs(o.verbs) do if n ~= "help" then v[#v + 1] = n end end
  return table.concat(v, ", ")
end

add(('.TH FLUENCE 1 "%s" "fluence %s" "User Commands"'):format(date, version))
add(".\\\" Generated by tools/gen-man.lua from the tables in core/clispec.c: do not edit;")
add(".\\\" run: make && lua5.4 tools/gen-man.lua > docs/fluence.1")
add(".SH NAME")
add("fluence, kubectl-fluence \\- choose the backend a Kubernetes workload runs on, client side")
add(".SH SYNOPSIS")
for _, v in ipairs(spec.verbs) do
  add(".B fluence")
  local args = v.args ~= "" and (" " .. opt(v.args)) or ""
  add(".BR " .. opt(v.name) .. (args ~= "" and (' "' .. args .. '"') or ""))
  add(".br")
end
add(".B kubectl fluence")
add(".I VERB")
add("\\&...")
add(".SH DESCRIPTION")
add(esc([[fluence chooses, on your own machine, the backend a Kubernetes workload runs on in
a cluster scheduled by Fluence (the Fluxion-based scheduler), following the
workload's own fluence.flux-framework.org/select-policy annotation, and stamps the
choice into the manifest, preserving every other byte.  It replaces the Go client
kubectl-fluence and accepts its manifests, attribute files and policy strings.]]))
add(".PP")
add(esc([[Installed as kubectl-fluence (the same program) it is a kubectl plugin: kubectl
fluence VERB works like fluence VERB, and its help speaks as "kubectl fluence".
Policies (the stages of a select-policy) and providers (where backends and their
attributes come from) are Lua plugins; users add their own.]]))
add(".SH COMMANDS")
for _, v in ipairs(spec.verbs) do
  add(".TP")
  add(".B " .. opt(v.name) .. (v.args ~= "" and (" " .. opt(v.args)) or ""))
  add(esc(v.summary:sub(1, 1):upper() .. v.summary:sub(2)) .. ".")
  if VERB_PROSE[v.name] then add(esc(VERB_PROSE[v.name])) end
end
add(".SH OPTIONS")
add(esc([[Options may follow the verb in any order; -v and -h may also come before it.
Short options bundle (-vv, -fFILE); a long option takes its value as the next
word or after "=" (--output=json); --dry-run takes one only after "=".
Options marked repeatable collect every occurrence.]]))
-- an option with one entry per meaning (-o) is one item: each meaning with
-- its verbs
local entries, order = {}, {}
for _, o in ipairs(spec.options) do
  if not entries[o.name] then entries[o.name] = {}; order[#order + 1] = o.name end
  table.insert(entries[o.name], o)
end
for _, name in ipairs(order) do
  local all = entries[name]
  local o = all[1]
  add(".TP")
  local names = {}
  if o.short then names[#names + 1] = "\\fB\\-" .. opt(o.short) .. "\\fR" end
  names[#names + 1] = "\\fB\\-\\-" .. opt(o.name) .. "\\fR"
  local mv = ""
  if o.metavar then
    mv = o.arg == "optional" and ("[=\\fI" .. o.metavar .. "\\fR]") or (" \\fI" .. o.metavar .. "\\fR")
  end
  add(table.concat(names, ", ") .. mv)
  if #all == 1 then
    add(esc(o.help) .. (o.help:match("%.$") and "" or "."))
    if OPTION_PROSE[name] then add(esc(OPTION_PROSE[name])) end
    add("Verbs: " .. esc(verbs_of(o)) .. ".")
  else
    for _, e in ipairs(all) do add(esc(verbs_of(e)) .. ": " .. esc(e.help) .. ".") end
    if OPTION_PROSE[name] then add(esc(OPTION_PROSE[name])) end
  end
end
add(".SH SELECT-POLICY")
add(esc([[A select-policy is a comma-separated pipeline of stages applied left to right; the
first backend of the final list wins.  Built-in stages: min-ATTR and max-ATTR
(rank by a numeric attribute and keep the best-equivalent group; cost means
cost_usd and queue means queue_size; --cost-tol sets the band of the cost and
queue rankers, min-cost~0.05 or min-cost~5% a stage's own), require:COND,...
(min_X=N, max_X=N, X>=N, X=value, X!=a|b ...), online-only, prefer:A|B (names,
or attribute tests such as prefer:spot=true|region=eu-west-2),
exclude:NAME, weighted:ATTR=W,... and, for fit checks, fits.  The full language is
in docs/policy-language.md; fluence policies lists what is installed.]]))
add(".SH PLUGINS")
add(esc([[A policy plugin is a file NAME.lua returning { name, description, compile }; a
provider plugin returns { name, description, candidates }.  They run sandboxed:
policies have no I/O at all, providers only the API handed to them.  The first
file of a name found wins, searching in this order:]]))
add(".IP 1. 4")
add("directories given with \\fB\\-\\-policy\\-dir\\fR / \\fB\\-\\-provider\\-dir\\fR, in order;")
add(".IP 2. 4")
add("the directories in \\fBFLUENCE_POLICY_PATH\\fR / \\fBFLUENCE_PROVIDER_PATH\\fR;")
add(".IP 3. 4")
add("\\fI~/.fluence/policies\\fR / \\fI~/.fluence/providers\\fR;")
add(".IP 4. 4")
add("the built-in plugins compiled into the program.")
add(".PP")
add(esc([[fluence policies and fluence providers show what was found and where.  The
plugin author's guide is docs/plugins.md.]]))
add(".SH ENVIRONMENT")
-- the variables from the program's one table (core/clispec.c), then what is
-- read from a manifest's containers rather than fluence's own environment
for _, e in ipairs(spec.environment) do
  add(".TP")
  add("\\fB" .. opt(e.name) .. "\\fR")
  add(esc(e.help:sub(1, 1):upper() .. e.help:sub(2) .. "."))
end
add(".PP")
add(esc("N_SHOTS in a container's env in the manifest (not fluence's own environment) is the " ..
        "shots of a quantum request when the select-shots annotation is absent (default 1000)."))
add(".SH FILES")
local FILES = {
  { "~/.fluence/policies/", "The user's policy plugins, NAME.lua." },
  { "~/.fluence/providers/", "The user's provider plugins, NAME.lua." },
  { "~/.kube/config", "The kubeconfig used when neither --kubeconfig nor KUBECONFIG is given." },
  { "/var/run/secrets/kubernetes.io/serviceaccount/", "Token, CA and namespace of the service account, inside a pod." },
  { "~/.aws/credentials, ~/.aws/config", "AWS credentials and region of the profile, for the braket-live and aws-prices providers." },
  { "~/.cache/fluence/prices/", "The price cache: one JSON file per provider and price, replaced atomically (XDG_CACHE_HOME moves it)." },
}
for _, f in ipairs(FILES) do
  add(".TP")
  local names = {}
  for n in f[1]:gmatch("[^, ]+") do names[#names + 1] = "\\fI" .. opt(n) .. "\\fR" end
  add(table.concat(names, ", "))
  add(esc(f[2]))
end
add(".SH EXIT STATUS")
add(esc([[An error (exit 2, 3, 4, 70) writes nothing to stdout, and one message on stderr says
what and where ("fluence: FILE:LINE:COL: message").  Exit 1 is an answer: select, apply
and create still write nothing, explain writes its table (why no backend fits) and test
its report; fn always writes the ResourceList with error results, as the KRM Functions
Specification asks.]]))
for _, e in ipairs(spec.exit_codes) do
  add(".TP")
  add(".B " .. e.code)
  add(esc(e.meaning:sub(1, 1):upper() .. e.meaning:sub(2)) .. ".")
end
add(".SH EXAMPLES")
local EXAMPLES = {
  { "Choose for every Fluence object, offline, from an attribute file:",
    "fluence select \\-f job.yaml \\-\\-attributes attrs.yaml \\-\\-offline" },
  { "Why each backend won or lost:",
    "fluence explain \\-f job.yaml \\-\\-attributes attrs.yaml" },
  { "Select and server-side apply, as a kubectl plugin:",
    "kubectl fluence apply \\-f job.yaml \\-\\-attributes attrs.yaml" },
  { "Decide with a policy written in Lua:",
    "fluence run cheapest.lua \\-f job.yaml \\-\\-attributes attrs.yaml" },
  { "Use your own provider plugins:",
    "fluence select \\-f job.yaml \\-\\-provider\\-dir ./providers \\-\\-provider gpu\\-pricing" },
  { "Start a policy of your own, and run its tests:",
    "fluence new policy cheap\\-enough \\-\\-dir ./plugins && fluence test ./plugins" },
  { "Today's on-demand and spot price of an EC2 instance type in two regions:",
    "fluence prices \\-\\-cloud aws \\-t p4d.24xlarge \\-r us\\-east\\-1 \\-r us\\-west\\-2" },
  { "Check manifests and plugins before using them:",
    "fluence check k8s/ ./plugins \\-\\-attributes attrs.yaml" },
  { "Shell completion:",
    "source <(fluence completion bash)" },
}
for _, ex in ipairs(EXAMPLES) do
  add(".PP")
  add(esc(ex[1]))
  add(".PP")
  add(".RS 4")
  add(".EX")
  add(ex[2])
  add(".EE")
  add(".RE")
end
add(".SH SEE ALSO")
add(".BR kubectl (1),")
add(".BR lua (1)")
add(".PP")
add(esc([[docs/architecture.md, docs/policy-language.md, docs/plugins.md,
docs/testing-plugins.md, docs/migration.md, docs/kubernetes.md and docs/braket.md in the source tree;
https://github.com/converged-computing/fluence.]]))

io.write(table.concat(out, "\n"), "\n")
