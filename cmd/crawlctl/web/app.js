// zkcrawl dashboard: polls /api/status and redraws; the buttons and the
// config form post to /api/action, which runs the crawlctl command.
"use strict";
(function () {
  const token = document.querySelector('meta[name="zkcrawl-token"]').content;
  const interval = Number(document.querySelector('meta[name="zkcrawl-interval-ms"]').content) || 2000;
  const $ = (id) => document.getElementById(id);
  let chart = null;

  function text(id, v) { $(id).textContent = v; }
  function fmtRate(r) { return r === null || r === undefined ? "n/a" : r.toFixed(1); }
  function age(s) { return s < 10 ? s.toFixed(1) + "s" : Math.round(s) + "s"; }

  function drawChart(history) {
    const labels = history.map((p) => new Date(p.t).toLocaleTimeString());
    const data = history.map((p) => (p.pages_per_s === null ? null : p.pages_per_s));
    if (typeof Chart === "undefined") return; // vendored script failed to load
    if (!chart) {
      chart = new Chart($("chart"), {
        type: "line",
        data: { labels, datasets: [{ label: "pages/s (all workers)", data, borderColor: "#0969da", pointRadius: 0, spanGaps: true, tension: 0.2 }] },
        options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true } } },
      });
      return;
    }
    chart.data.labels = labels;
    chart.data.datasets[0].data = data;
    chart.update();
  }

  function drawWorkers(st) {
    const body = $("workers").querySelector("tbody");
    body.replaceChildren();
    for (const w of st.workers) {
      const tr = document.createElement("tr");
      tr.dataset.worker = w.id;
      const cells = [w.id, w.host, w.version || "-", String(w.config_version) + (w.on_config_version ? "" : "*"),
        w.pages, fmtRate(w.pages_per_s), w.errors, w.in_flight, w.shards_owned, age(w.heartbeat_age_s) + " ago",
        w.config_error || w.status_error || "-"];
      cells.forEach((c, i) => {
        const td = document.createElement("td");
        td.textContent = String(c);
        if (i === 3 && !w.on_config_version) td.className = "behind";
        tr.appendChild(td);
      });
      body.appendChild(tr);
    }
    text("workercount", "(" + st.workers.length + " live)");
  }

  function drawHeatmap(st) {
    const n = st.queue.shards;
    const byShard = new Map(st.queue.non_empty_shards.map((s) => [s.shard, s]));
    const max = Math.max(1, ...st.queue.non_empty_shards.map((s) => s.queued));
    const hm = $("heatmap");
    if (hm.children.length !== n) {
      hm.replaceChildren();
      for (let i = 0; i < n; i++) {
        const d = document.createElement("div");
        d.className = "cell";
        hm.appendChild(d);
      }
    }
    for (let i = 0; i < n; i++) {
      const name = "s" + String(i).padStart(3, "0");
      const s = byShard.get(name) || { queued: 0, claimed: 0 };
      const cell = hm.children[i];
      const level = s.queued === 0 ? 0 : 0.15 + 0.85 * Math.log1p(s.queued) / Math.log1p(max);
      cell.style.background = s.queued === 0 ? "#eef" : "rgba(9, 105, 218, " + level.toFixed(2) + ")";
      cell.classList.toggle("claimed", s.claimed > 0);
      cell.dataset.shard = name;
      cell.dataset.queued = s.queued;
      cell.title = name + ": " + s.queued + " queued, " + s.claimed + " claimed";
    }
    text("shardinfo", "(" + st.queue.queued + " queued in " + st.queue.non_empty_shards.length + " of " + n + " shards)");
  }

  function draw(doc) {
    $("error").hidden = !doc.error;
    if (doc.error) text("error", "last refresh failed: " + doc.error);
    const st = doc.status;
    if (!st) return;
    const state = $("state");
    state.textContent = st.state.toUpperCase();
    state.className = "big state-" + st.state;
    text("rate", fmtRate(st.pages_per_s));
    text("queued", st.queue.queued);
    text("claims", st.claims.count);
    text("failed", st.failed);
    text("cfgversion", st.config.version + (st.config.valid ? "" : " (invalid)"));
    text("updated", "updated " + new Date(st.time).toLocaleTimeString());
    drawWorkers(st);
    drawHeatmap(st);
    drawChart(doc.history || []);
    text("deadletters", doc.dead_letters || "no dead letters");
    text("config", doc.config_doc || "(no config znode)");
  }

  async function poll() {
    try {
      const r = await fetch("/api/status", { cache: "no-store" });
      draw(await r.json());
    } catch (e) {
      $("error").hidden = false;
      text("error", "dashboard unreachable: " + e);
    }
  }

  async function act(action, extra) {
    const body = new URLSearchParams({ action, ...(extra || {}) });
    const out = $("result");
    try {
      const r = await fetch("/api/action", { method: "POST", headers: { "X-Zkcrawl-Token": token }, body });
      const res = await r.json();
      out.hidden = false;
      out.className = "result" + (res.ok ? "" : " fail");
      out.textContent = (res.output || "") + (res.error ? "error: " + res.error : "");
    } catch (e) {
      out.hidden = false;
      out.className = "result fail";
      out.textContent = "request failed: " + e;
    }
    setTimeout(poll, 300);
  }

  document.querySelectorAll("button[data-action]").forEach((b) => {
    b.addEventListener("click", () => {
      if (b.dataset.confirm && !window.confirm(b.dataset.confirm)) return;
      act(b.dataset.action);
    });
  });
  $("configform").addEventListener("submit", (e) => {
    e.preventDefault();
    act("config-set", { assignments: $("assignments").value });
  });

  poll();
  setInterval(poll, interval);
})();
