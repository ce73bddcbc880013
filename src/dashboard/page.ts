/**
 * The dashboard page: one HTML document with its stylesheet and script inline, uPlot from `/assets/`. The script
 * opens `/events` (server-sent events, `server.ts`), renders the `snapshot` (NodePools, nodes grouped by NodePool
 * with CPU and memory bars, pending pods, KarpenterMachinePools, the decision log, three uPlot charts) and then
 * applies each `patch` to the rows it names (a changed node replaces its own row only) and prepends each
 * `decision`. Every string from the cluster is HTML-escaped. `window.__dashboard` exposes the render and update
 * times (ms) for the browser test and `bench/dashboard.ts`.
 */

const STYLE = `
body{font:13px/1.4 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:8px 16px;display:flex;gap:24px;align-items:baseline}
header h1{font-size:16px;margin:0}header .t{font-variant-numeric:tabular-nums}
main{padding:8px 16px}section{margin:12px 0}h2{font-size:14px;margin:8px 0}h3{font-size:13px;margin:6px 0}
table{border-collapse:collapse;width:100%;background:#fff}th,td{padding:2px 6px;border-bottom:1px solid #e3e6ea;text-align:left;white-space:nowrap}
td.r{text-align:right;font-variant-numeric:tabular-nums}td.why{white-space:normal;max-width:420px;color:#555}
.bar{display:inline-block;width:80px;height:8px;background:#e3e6ea;vertical-align:middle;margin-right:4px}
.bar span{display:block;height:100%;background:#3b82f6}.bar span.hi{background:#ef4444}
.st{padding:0 4px;border-radius:3px;background:#e3e6ea}.st-disrupting,.st-expiring{background:#fecaca}
.st-drifted{background:#fde68a}.st-launching,.st-registered{background:#bfdbfe}.st-initialized{background:#bbf7d0}
#error{display:none;background:#b91c1c;color:#fff;padding:10px 16px;font-weight:600}
#charts{display:flex;gap:12px;flex-wrap:wrap}.chart{background:#fff;padding:4px}
#log li{margin:2px 0}#log .k{font-weight:600}#log .d{color:#555;margin-left:12px;white-space:pre-wrap}
.muted{color:#777}
.pool,#pending,#log{content-visibility:auto;contain-intrinsic-size:auto 600px}
`;

const SCRIPT = String.raw`
(function(){
var D = window.__dashboard = {snapshots:0, patches:0, renderMs:0, updateMs:0, firstRenderAt:0};
var model = null, history = [], log = [], charts = [];
var MAX_PENDING = 500, MAX_LOG = 200, MAX_POINTS = 720;
function $(id){return document.getElementById(id);}
function esc(s){return String(s == null ? '' : s).replace(/[&<>"']/g, function(c){return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c];});}
function cores(m){return (m/1000).toFixed(2);}
function gib(b){return (b/1073741824).toFixed(1);}
function usd(p){return p == null ? '?' : '$' + p.toFixed(4);}
function age(s){return s < 120 ? s + 's' : s < 7200 ? Math.floor(s/60) + 'm' : s < 172800 ? Math.floor(s/3600) + 'h' : Math.floor(s/86400) + 'd';}
function bar(u, fmt){var p = u.allocatable > 0 ? Math.min(100, 100*u.requested/u.allocatable) : 0;
  return '<span class="bar"><span class="' + (p > 90 ? 'hi' : '') + '" style="width:' + p.toFixed(0) + '%"></span></span>' + fmt(u.requested) + '/' + fmt(u.allocatable);}
function byName(a, b){return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;}
function nodeCells(n){
  return '<td>' + esc(n.name) + (n.nodeClaim && n.nodeClaim !== n.name ? ' <span class="muted">' + esc(n.nodeClaim) + '</span>' : '') + '</td>' +
    '<td>' + esc(n.instanceType) + '</td><td>' + esc(n.zone) + '</td><td>' + esc(n.capacityType) + '</td>' +
    '<td class="r">' + usd(n.priceUSDPerHour) + '</td><td>' + bar(n.cpu, cores) + '</td><td>' + bar(n.memory, gib) + ' GiB</td>' +
    '<td class="r">' + n.pods + '</td><td class="r">' + age(n.ageSeconds) + '</td>' +
    '<td><span class="st st-' + esc(n.state) + '">' + esc(n.state) + '</span></td>' +
    '<td class="why">' + (n.candidate ? '<b>candidate</b>: ' : '') + esc(n.candidateReason) + '</td>';}
var NODE_HEAD = '<tr><th>node</th><th>instance type</th><th>zone</th><th>capacity</th><th>$/hour</th><th>CPU (cores) requested/allocatable</th><th>memory</th><th>pods</th><th>age</th><th>state</th><th>disruption</th></tr>';
function poolId(p){return 'pool-' + encodeURIComponent(p || '(unmanaged)');}
function renderPoolNodes(pool){
  var el = $(poolId(pool)); var rows = model.nodes.filter(function(n){return n.nodePool === pool;}).sort(byName);
  if (!el) { renderNodes(); return; }
  if (rows.length === 0) { el.parentNode.removeChild(el); return; }
  el.querySelector('tbody').innerHTML = rows.map(function(n){return '<tr data-node="' + esc(n.name) + '">' + nodeCells(n) + '</tr>';}).join('');
  el.querySelector('h3 .n').textContent = rows.length + ' node(s)';}
function renderNodes(){
  var groups = {}; model.nodes.forEach(function(n){(groups[n.nodePool] = groups[n.nodePool] || []).push(n);});
  $('nodes').innerHTML = Object.keys(groups).sort().map(function(p){var rows = groups[p].sort(byName);
    return '<div class="pool" id="' + poolId(p) + '"><h3>NodePool ' + esc(p || '(unmanaged)') + ' <span class="n muted">' + rows.length + ' node(s)</span></h3><table><thead>' + NODE_HEAD + '</thead><tbody>' +
      rows.map(function(n){return '<tr data-node="' + esc(n.name) + '">' + nodeCells(n) + '</tr>';}).join('') + '</tbody></table></div>';}).join('') || '<p class="muted">no nodes</p>';}
function limitText(l){return Object.keys(l).map(function(k){var v = l[k];
  var f = k === 'cpu' ? cores : k === 'memory' ? function(b){return gib(b) + ' GiB';} : String; return esc(k) + ' ' + f(v.used) + ' / ' + f(v.limit);}).join(', ') || 'none';}
function budgetText(b){return Object.keys(b).map(function(k){return esc(k) + ' ' + (b[k] == null ? 'unlimited' : b[k]);}).join(', ');}
function renderPools(){
  $('pools').innerHTML = '<table><thead><tr><th>NodePool</th><th>weight</th><th>nodes</th><th>$/hour</th><th>limits used</th><th>disruptions allowed now</th></tr></thead><tbody>' +
    model.nodePools.map(function(p){return '<tr><td>' + esc(p.name) + '</td><td class="r">' + p.weight + '</td><td class="r">' + p.nodes + '</td><td class="r">' + usd(p.costUSDPerHour) + '</td><td>' + limitText(p.limits) + '</td><td>' + budgetText(p.budgets) + '</td></tr>';}).join('') + '</tbody></table>';
  var mps = model.machinePools;
  $('mps-section').style.display = mps.length ? '' : 'none';
  $('mps').innerHTML = '<table><thead><tr><th>KarpenterMachinePool</th><th>MachinePool</th><th>replicas</th><th>provider IDs</th></tr></thead><tbody>' +
    mps.map(function(m){return '<tr><td>' + esc(m.namespace + '/' + m.name) + '</td><td>' + esc(m.machinePool) + '</td><td class="r">' + m.replicas + '</td><td class="why">' + esc(m.providerIDs.join(', ')) + '</td></tr>';}).join('') + '</tbody></table>';}
function renderPending(){
  var ps = model.pendingPods.slice().sort(function(a, b){return a.pod < b.pod ? -1 : 1;});
  $('pending-count').textContent = ps.length;
  $('pending').innerHTML = ps.length === 0 ? '<p class="muted">none</p>' : '<table><thead><tr><th>pod</th><th>waiting for</th><th>reason</th></tr></thead><tbody>' +
    ps.slice(0, MAX_PENDING).map(function(p){return '<tr data-pod="' + esc(p.pod) + '"><td>' + esc(p.pod) + '</td><td>' + esc(p.waitingFor || '') + '</td><td class="why">' + esc(p.reason) + '</td></tr>';}).join('') +
    '</tbody></table>' + (ps.length > MAX_PENDING ? '<p class="muted">and ' + (ps.length - MAX_PENDING) + ' more</p>' : '');}
function logItem(e){return '<li data-id="' + e.id + '"><span class="muted">' + esc(new Date(e.at).toISOString().slice(11, 19)) + '</span> <span class="k">' + esc(e.kind) + '</span> ' + esc(e.summary) +
  (e.details.length ? '<div class="d">' + e.details.map(esc).join('\n') + '</div>' : '') + '</li>';}
function renderLog(){$('log').innerHTML = log.slice(0, MAX_LOG).map(logItem).join('') || '<li class="muted">no decisions yet</li>';}
function renderHeader(){
  var t = model.totals;
  $('cost').textContent = '$' + t.costUSDPerHour.toFixed(4) + '/hour'; $('count').textContent = t.nodes + ' node(s)';
  $('pend').textContent = t.pendingPods + ' pending pod(s)';
  var e = $('error'); e.style.display = model.error ? 'block' : 'none'; e.textContent = model.error ? 'Cannot show the cluster: ' + model.error : '';}
function chartData(){var xs = history.map(function(h){return h.at/1000;});
  return [[xs, history.map(function(h){return h.costUSDPerHour;})], [xs, history.map(function(h){return h.nodes;})], [xs, history.map(function(h){return h.pendingPods;})]];}
function renderCharts(){
  if (!window.uPlot) return;
  var d = chartData();
  if (charts.length === 0) {
    [['cost $/hour', '#ef4444'], ['nodes', '#3b82f6'], ['pending pods', '#f59e0b']].forEach(function(s, i){
      charts.push(new uPlot({title: s[0], width: 360, height: 160, legend: {show: false}, series: [{}, {stroke: s[1], width: 2}]}, d[i], $('chart' + i)));});
  } else charts.forEach(function(c, i){c.setData(d[i]);});}
function point(t){var last = history[history.length - 1];
  if (last && last.at === t.at) return; history.push(t); if (history.length > MAX_POINTS) history.shift();}
function timed(f){var t0 = performance.now(); f(); void document.body.offsetHeight; return performance.now() - t0;}
function applyList(list, lp, key){
  if (!lp) return list; var gone = {}; lp.remove.forEach(function(k){gone[k] = 1;});
  var up = {}; lp.upsert.forEach(function(x){up[key(x)] = x;});
  var out = list.filter(function(x){return !gone[key(x)];}).map(function(x){var k = key(x); var n = up[k]; delete up[k]; return n || x;});
  Object.keys(up).forEach(function(k){out.push(up[k]);}); return out;}
function patchNodes(lp){
  var old = {}; model.nodes.forEach(function(n){old[n.name] = n;});
  model.nodes = applyList(model.nodes, lp, function(n){return n.name;});
  var redo = {};
  lp.remove.forEach(function(k){if (old[k]) redo[old[k].nodePool] = 1;});
  lp.upsert.forEach(function(n){var o = old[n.name]; var tr = o && o.nodePool === n.nodePool && document.querySelector('tr[data-node="' + CSS.escape(n.name) + '"]');
    if (tr) tr.innerHTML = nodeCells(n); else redo[n.nodePool] = 1;});
  Object.keys(redo).forEach(renderPoolNodes);}
function patchPending(lp){
  var had = {}; model.pendingPods.forEach(function(x){had[x.pod] = 1;});
  model.pendingPods = applyList(model.pendingPods, lp, function(x){return x.pod;});
  var rows = {}; Array.prototype.forEach.call(document.querySelectorAll('#pending tr[data-pod]'), function(tr){rows[tr.getAttribute('data-pod')] = tr;});
  var fresh = lp.upsert.some(function(x){return !had[x.pod];});
  if (fresh || model.pendingPods.length === 0 || lp.remove.some(function(k){return !rows[k];})) { renderPending(); return; }
  lp.remove.forEach(function(k){rows[k].parentNode.removeChild(rows[k]);});
  lp.upsert.forEach(function(x){var tr = rows[x.pod]; if (tr) tr.innerHTML = '<td>' + esc(x.pod) + '</td><td>' + esc(x.waitingFor || '') + '</td><td class="why">' + esc(x.reason) + '</td>';});
  $('pending-count').textContent = model.pendingPods.length;}
function onSnapshot(s){
  model = s.view; history = s.history.slice(); log = s.log.slice(); point(model.totals);
  D.renderMs = timed(function(){renderHeader(); renderPools(); renderNodes(); renderPending(); renderLog(); renderCharts();});
  D.snapshots++; if (!D.firstRenderAt) D.firstRenderAt = performance.now();}
function onPatch(p){
  D.updateMs = timed(function(){
    model.at = p.at; model.totals = p.totals;
    if (p.error === null) delete model.error; else if (p.error !== undefined) model.error = p.error;
    if (p.nodes) patchNodes(p.nodes);
    if (p.pendingPods) patchPending(p.pendingPods);
    if (p.nodePools || p.machinePools) { model.nodePools = applyList(model.nodePools, p.nodePools, function(x){return x.name;});
      model.machinePools = applyList(model.machinePools, p.machinePools, function(x){return x.namespace + '/' + x.name;}); renderPools(); }
    renderHeader(); point(p.totals); renderCharts();});
  D.patches++;}
function onDecision(e){log.unshift(e); if (log.length > MAX_LOG) log.pop(); renderLog();}
function connect(){
  var es = new EventSource('events');
  es.addEventListener('snapshot', function(m){onSnapshot(JSON.parse(m.data)); $('conn').textContent = 'live';});
  es.addEventListener('patch', function(m){if (model) onPatch(JSON.parse(m.data));});
  es.addEventListener('decision', function(m){onDecision(JSON.parse(m.data));});
  es.onerror = function(){$('conn').textContent = 'disconnected from the controller, retrying';};}
D.onSnapshot = onSnapshot; D.onPatch = onPatch;
if (!window.__dashboardNoConnect) connect();
})();
`;

/**
 * The page's HTML. `uplotMissing`: why uPlot could not be loaded (the page says so where the charts would be).
 */
export function dashboardPage(uplotMissing?: string): string {
  const charts = uplotMissing
    ? `<p class="muted">charts unavailable: ${uplotMissing.replace(/[&<>]/g, '')}</p>`
    : '<div class="chart" id="chart0"></div><div class="chart" id="chart1"></div><div class="chart" id="chart2"></div>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>capenter dashboard</title>
${uplotMissing ? '' : '<link rel="stylesheet" href="assets/uplot.css"><script src="assets/uplot.js"></script>'}
<style>${STYLE}</style></head>
<body><header><h1>capenter</h1><span class="t" id="cost"></span><span class="t" id="count"></span><span class="t" id="pend"></span><span class="muted" id="conn">connecting</span></header>
<div id="error" role="alert"></div>
<main>
<section><div id="charts">${charts}</div></section>
<section><h2>NodePools</h2><div id="pools"></div></section>
<section id="mps-section" style="display:none"><h2>KarpenterMachinePools</h2><div id="mps"></div></section>
<section><h2>Nodes</h2><div id="nodes"></div></section>
<section><h2>Pending pods (<span id="pending-count">0</span>)</h2><div id="pending"></div></section>
<section><h2>Decisions (newest first)</h2><ul id="log"></ul></section>
</main>
<script>${SCRIPT}</script>
</body></html>
`;
}
