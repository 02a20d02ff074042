/* moot view: the pages' own script (no library). Everything works without it; it adds the theme
   switch, keyboard navigation, instant filtering and sorting of the runs list, picking two runs to
   compare, model calls fetched when their toggle opens, live updates (server-sent events), and on
   a seat's page (a person's turn) and the rating page (`moot annotate --browser`) the answer box
   focused when it asks, Ctrl+Enter to send (Enter for a one-line answer), one send per question.
   It only ever inserts HTML the viewer's own server rendered (escaped there). */
(function () {
  "use strict";
  var root = document.documentElement;
  root.classList.add("js");
  try {
    var saved = window.localStorage.getItem("moot-theme");
    if (saved === "dark" || saved === "light") { root.classList.add(saved); }
  } catch (e) { /* no storage (a locked-down browser): the system's scheme */ }

  function dark() {
    if (root.classList.contains("dark")) { return true; }
    if (root.classList.contains("light")) { return false; }
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  function toggleTheme() {
    var next = dark() ? "light" : "dark";
    root.classList.remove("light", "dark");
    root.classList.add(next);
    try { window.localStorage.setItem("moot-theme", next); } catch (e) { /* kept for this page only */ }
  }

  function $(selector, within) { return (within || document).querySelector(selector); }
  function $$(selector, within) { return Array.prototype.slice.call((within || document).querySelectorAll(selector)); }

  /* ---------------------------------------------------------------- keyboard */
  function navItems() {
    var rows = $$("[data-nav]").filter(function (r) { return !r.hidden && r.offsetParent !== null; });
    return rows.length ? rows : $$("article.entry");
  }

  function move(step) {
    var items = navItems();
    if (!items.length) { return; }
    var at = items.findIndex(function (r) { return r.classList.contains("selected"); });
    var next = items[Math.min(items.length - 1, Math.max(0, at + step))];
    items.forEach(function (r) { r.classList.remove("selected"); });
    next.classList.add("selected");
    var link = next.matches("article") ? null : $("a", next);
    (link || next).focus({ preventScroll: true });
    next.scrollIntoView({ block: "nearest" });
  }

  function follow(rel) {
    var link = $("a[rel=" + rel + "]");
    if (link) { window.location.href = link.href; }
  }

  function up() {  /* the nearest crumb above this page (the page's own crumb is aria-current) */
    var crumbs = $$(".crumbs a:not([aria-current])");
    if (crumbs.length) { window.location.href = crumbs[crumbs.length - 1].href; }
  }

  function toggleHelp() {
    var help = $("#help"), button = $("#help-button");
    if (!help) { return; }
    help.hidden = !help.hidden;
    if (button) { button.setAttribute("aria-expanded", String(!help.hidden)); }
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName))) {
      if (event.key === "Escape") { target.blur(); }
      return;
    }
    var actions = {
      "j": function () { move(1); }, "k": function () { move(-1); },
      "n": function () { follow("next"); }, "p": function () { follow("prev"); },
      "u": up, "t": toggleTheme, "?": toggleHelp,
      "/": function () { var s = $("input[type=search]"); if (s) { s.focus(); } },
      "Escape": function () { var h = $("#help"); if (h && !h.hidden) { toggleHelp(); } }
    };
    var act = actions[event.key];
    if (act) { event.preventDefault(); act(); }
  });

  /* ---------------------------------------------------------------- the runs list */
  function applyRunFilters(form) {
    var wanted = {};
    $$("[data-key]", form).forEach(function (input) { wanted[input.getAttribute("data-key")] = input.value.trim().toLowerCase(); });
    var rows = $$("table.runs tbody tr[data-nav]"), shown = 0;
    rows.forEach(function (row) {
      var keep = Object.keys(wanted).every(function (key) {
        var value = wanted[key], have = (row.getAttribute("data-" + key) || "").toLowerCase();
        if (!value) { return true; }
        return key === "protocol" || key === "status" ? have === value : have.indexOf(value) >= 0;
      });
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    var count = $("#runs-count");
    if (count) { count.textContent = shown + " of " + rows.length + " runs"; }
  }

  function bindRunFilters() {
    var form = $("form[data-filter=runs]");
    if (!form) { return; }
    var params = new URLSearchParams(window.location.search);
    $$("[name]", form).forEach(function (input) {
      if (params.has(input.name)) { input.value = params.get(input.name); }
    });
    form.addEventListener("input", function () { applyRunFilters(form); });
    form.addEventListener("change", function () { applyRunFilters(form); });
    form.addEventListener("submit", function (event) { event.preventDefault(); applyRunFilters(form); });
    applyRunFilters(form);
  }

  function cellValue(row, index) {
    var cell = row.children[index];
    if (!cell) { return ""; }
    return cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
  }

  function bindSorting(within) {
    $$("table.sortable", within).forEach(function (table) {
      $$("th[data-sort]", table).forEach(function (th) {
        th.tabIndex = 0;
        function sort() {
          var index = Array.prototype.indexOf.call(th.parentNode.children, th);
          var ascending = th.getAttribute("aria-sort") !== "ascending";
          var numeric = th.getAttribute("data-sort") === "num";
          var body = table.tBodies[0];
          var rows = $$("tr[data-nav]", body);
          rows.sort(function (a, b) {
            var x = cellValue(a, index), y = cellValue(b, index);
            var order = numeric ? (parseFloat(x || "-Infinity") - parseFloat(y || "-Infinity")) : x.localeCompare(y);
            return ascending ? order : -order;
          });
          rows.forEach(function (row) { body.appendChild(row); });
          $$("th[data-sort]", table).forEach(function (other) { other.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        }
        th.addEventListener("click", sort);
        th.addEventListener("keydown", function (event) {
          if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
        });
      });
    });
  }

  function bindPicking() {
    var button = $("#compare-picked");
    if (!button) { return; }
    function picked() { return $$("input.pick:checked").map(function (box) { return box.value; }); }
    document.addEventListener("change", function (event) {
      if (event.target.classList && event.target.classList.contains("pick")) { button.disabled = picked().length !== 2; }
    });
    button.addEventListener("click", function () {
      var runs = picked();
      if (runs.length === 2) {
        window.location.href = "/compare?a=" + encodeURIComponent(runs[0]) + "&b=" + encodeURIComponent(runs[1]);
      }
    });
  }

  /* ---------------------------------------------------------------- model calls, fetched on demand */
  function bindCalls(within) {
    $$("details.calls", within).forEach(function (details) {
      details.addEventListener("toggle", function () {
        if (!details.open) { return; }
        $$("li[data-fragment]", details).forEach(function (item) {
          if (item.getAttribute("data-loaded")) { return; }
          item.setAttribute("data-loaded", "1");
          fetch(item.getAttribute("data-fragment"), { credentials: "same-origin" }).then(function (response) {
            if (!response.ok) { throw new Error(String(response.status)); }
            return response.text();
          }).then(function (html) {
            var holder = document.createElement("div");
            holder.innerHTML = html;  /* the viewer's own fragment, escaped by the server */
            item.appendChild(holder);
          }).catch(function () { item.removeAttribute("data-loaded"); });
        });
      });
    });
  }

  /* ---------------------------------------------------------------- a person's seat */
  var pageTitle = document.title;

  function bindSeat() {
    var panel = $("#seat-panel"), form = $("form.seat-form");
    var asking = Boolean(form);
    document.title = (asking ? "\u25cf Your turn \u2014 " : "") + pageTitle;
    if (!panel || !form) { return; }
    form.addEventListener("submit", function (event) {
      if (form.getAttribute("data-sent")) { event.preventDefault(); return; }  /* one answer per question */
      form.setAttribute("data-sent", "1");
    });
    var text = $("textarea", form);
    if (text) {
      var oneLine = text.hasAttribute("data-one-line");  /* a name: Enter sends */
      text.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && (event.ctrlKey || event.metaKey || (oneLine && !event.shiftKey))) {
          event.preventDefault();
          if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
        }
      });
    }
    var first = text || $(".seat-question", form);  /* a choice is not made by a stray Enter */
    if (first) { first.focus({ preventScroll: true }); }
  }

  /* ---------------------------------------------------------------- live updates */
  function openIds(region) {
    return $$("details[open][id]", region).map(function (d) { return d.id; });
  }

  function replaceRegion(id, hash, html) {
    var region = document.getElementById(id);
    if (!region || region.getAttribute("data-hash") === hash) { return; }
    region.setAttribute("data-hash", hash);
    var open = openIds(region);
    var atBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 40;
    var selected = $(".selected", region);
    var selectedText = selected ? selected.textContent : null;
    region.innerHTML = html;  /* rendered by the viewer's server from the run's files, escaped there */
    open.forEach(function (openId) { var d = document.getElementById(openId); if (d) { d.open = true; } });
    if (selectedText !== null) {
      $$("[data-nav]", region).forEach(function (row) { if (row.textContent === selectedText) { row.classList.add("selected"); } });
    }
    bindCalls(region);
    bindSorting(region);
    if (region.id === "seat-panel") { bindSeat(); }
    var form = $("form[data-filter=runs]");
    if (form && region.id === "runs") { applyRunFilters(form); }
    if (atBottom && document.body.getAttribute("data-follow") !== "no") { window.scrollTo(0, document.documentElement.scrollHeight); }
  }

  function bindLive() {
    var url = document.body.getAttribute("data-live");
    var state = $("#live-state");
    if (!url || !window.EventSource) { return; }
    var source = new EventSource(url);
    function say(text, on) {
      if (!state) { return; }
      state.textContent = text;
      state.classList.toggle("on", Boolean(on));
    }
    source.addEventListener("open", function () { say("live", true); });
    source.addEventListener("regions", function (event) {
      var regions = JSON.parse(event.data);
      Object.keys(regions).forEach(function (id) { replaceRegion(id, regions[id][0], regions[id][1]); });
      document.body.setAttribute("data-updated", String(Date.now()));
    });
    source.addEventListener("state", function (event) { say(event.data, event.data === "live"); });
    source.addEventListener("done", function () { say("finished", false); source.close(); });
    source.addEventListener("error", function () { say("reconnecting…", false); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var theme = $("#theme"), help = $("#help-button");
    if (theme) { theme.addEventListener("click", toggleTheme); }
    if (help) { help.addEventListener("click", toggleHelp); }
    bindRunFilters();
    bindSorting(document);
    bindPicking();
    bindCalls(document);
    if ($("#seat-panel")) {  /* a seat's page opens at the conversation's end, as a chat does */
      bindSeat();
      window.scrollTo(0, document.documentElement.scrollHeight);
    }
    bindLive();
  });
}());
