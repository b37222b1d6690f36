// annograph's HTML report: pan and zoom, search, side panel, sortable table, book pages.
// Inlined once and allowed by its SHA-256 in the page's Content-Security-Policy. Text from the model only ever
// reaches the page through textContent; boxes are found through the JSON data (ops[k].el, ops[k].pages).
(function () {
  "use strict";
  var doc = document;
  var byId = function (id) { return doc.getElementById(id); };
  var data = JSON.parse(byId("report-data").textContent);
  var ops = data.ops.map(function (row) {  // each a list of its fields, in the order data.fields names them
    var op = {};
    data.fields.forEach(function (field, i) { op[field] = row[i]; });
    return op;
  });
  doc.documentElement.classList.add("js");

  var viewport = byId("viewport"), panel = byId("panel");
  var sections = Array.prototype.slice.call(viewport.querySelectorAll(":scope > section"));
  var opOfEl = Object.create(null);  // no inherited keys: a hash such as #constructor names nothing
  ops.forEach(function (op, k) { opOfEl[op.el] = k; });
  // Each page's SVG travels as the text of its <noscript> (markup without script, one text node with it); only
  // the page shown is built into the DOM. Per page: the pan/zoom state, kept while the page is not shown.
  var pages = sections.map(function (section) {
    return { section: section, source: section.querySelector("noscript"), svg: null, boxes: null,
             k: 0, x: 0, y: 0, full: null, font: 0, fitted: false };
  });
  var current = -1, pinned = -1, lit = null, litRow = null;
  var SVG_NS = "http://www.w3.org/2000/svg", READABLE_PX = 8;

  function build(p) {
    if (p.svg || !p.source) return;
    var parsed = new DOMParser().parseFromString(p.source.textContent, "image/svg+xml").documentElement;
    if (parsed.namespaceURI !== SVG_NS || parsed.localName !== "svg" ||
        parsed.getElementsByTagName("parsererror").length) return;
    var svg = doc.importNode(parsed, true), boxes = Object.create(null);
    p.section.appendChild(svg);
    svg.querySelectorAll("g.node").forEach(function (g) { if (g.id in opOfEl) boxes[g.id] = g; });
    p.svg = svg;
    p.boxes = boxes;
    var box = svg.viewBox.baseVal;
    if (!p.full && box && box.width) p.full = { x: box.x, y: box.y, w: box.width, h: box.height };
    svg.setAttribute("width", "100%");
    svg.setAttribute("height", "100%");
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    if (p.full && p.k) apply(p, p.fitted);
  }
  function drop(p) {
    if (!p.svg) return;
    if (lit && p.svg.contains(lit)) lit = null;
    p.svg.remove();
    p.svg = p.boxes = null;
  }

  // ---- pan and zoom: the viewBox is the view, k screen pixels per SVG unit --------------------------------
  function size() { return { w: viewport.clientWidth || 1, h: viewport.clientHeight || 1 }; }
  function fitScale(p) { var s = size(); return Math.min(s.w / p.full.w, s.h / p.full.h) * 0.97; }
  function apply(p, fitted) {
    var s = size();
    p.fitted = !!fitted;
    p.svg.setAttribute("viewBox", [p.x, p.y, s.w / p.k, s.h / p.k].join(" "));
  }
  // The first view of every page (and "fit"): the whole page, its top (where the legend is) at the top of
  // the viewport, centred across; it is fitted again when the window changes size, until moved.
  function fit(p) {
    var s = size();
    p.k = fitScale(p);
    p.x = p.full.x + p.full.w / 2 - s.w / (2 * p.k);
    p.y = p.full.y - (s.h * 0.015) / p.k;
    apply(p, true);
  }
  // The viewport (and the panel beside it) reach down to the window's bottom, wherever the toolbar above them
  // ends, so that a fitted page is whole on screen.
  function sizeViewport() {
    var top = viewport.getBoundingClientRect().top + window.scrollY;
    var height = Math.max(384, Math.floor(window.innerHeight - top - 12)) + "px";
    viewport.style.height = height;
    panel.style.height = height;
  }
  function actual(p, top) {  // 1 pt = 4/3 px: the size Graphviz meant
    var s = size();
    p.k = 4 / 3;
    p.x = p.full.x + p.full.w / 2 - s.w / (2 * p.k);
    p.y = top ? p.full.y : p.full.y + p.full.h / 2 - s.h / (2 * p.k);
    apply(p);
  }
  function zoomAt(p, factor, cx, cy) {
    var low = Math.min(fitScale(p), 1) / 2, k = Math.max(low, Math.min(8, p.k * factor));
    p.x += cx / p.k - cx / k;
    p.y += cy / p.k - cy / k;
    p.k = k;
    apply(p);
  }
  function zoomCentre(factor) {
    var p = pages[current], s = size();
    if (p && p.full) zoomAt(p, factor, s.w / 2, s.h / 2);
  }
  function boxesOf(p) {  // the drawn boxes (operators, groups, inputs, stubs), not the legend
    return Array.prototype.filter.call(p.svg.querySelectorAll("g.node"), function (g) { return !/legend$/.test(g.id); });
  }
  function smallestText(p) {  // the smallest text size in the page's boxes, in SVG units (pt)
    var least = Infinity;
    boxesOf(p).forEach(function (g) {
      g.querySelectorAll("text").forEach(function (t) {
        var size = parseFloat(t.getAttribute("font-size"));
        if (size > 0 && t.textContent.trim()) least = Math.min(least, size);
      });
    });
    return least < Infinity ? least : 14;
  }
  // "readable" (r): the whole page when its smallest box text stays readable (8 px); otherwise at that text
  // size (or as wide as the window, if that is larger), at the place where most boxes are whole on screen.
  function readable(p) {
    var s = size();
    if (!p.font) p.font = smallestText(p);
    var least = READABLE_PX / p.font;
    if (fitScale(p) >= least) { fit(p); return; }
    p.k = Math.max(least, Math.min(s.w * 0.97 / p.full.w, 1));
    var wide = p.full.w * p.k;
    p.x = wide < s.w ? p.full.x + p.full.w / 2 - s.w / (2 * p.k) : p.full.x;
    p.y = p.full.y;
    apply(p);
    var best = bestPlace(p, wide < s.w ? 0 : s.w / p.k, s.h / p.k);
    if (wide >= s.w) p.x = best.x;
    p.y = best.y;
    apply(p);
  }
  // The top left corner (SVG units) of a window this wide (0: the page's width) and high that holds the most
  // boxes whole: the highest such place, then the leftmost. Corners tried: the page's, and a little above and
  // left of each box.
  function bestPlace(p, width, height) {
    var v = p.svg.getBoundingClientRect(), spans = boxesOf(p).map(function (g) {
      var r = g.getBoundingClientRect();
      return [p.x + (r.left - v.left) / p.k, p.y + (r.top - v.top) / p.k,
              p.x + (r.right - v.left) / p.k, p.y + (r.bottom - v.top) / p.k];
    });
    function corners(at, low, span) {
      var all = [low].concat(spans.map(function (sp) { return sp[at] - 8; })).map(function (c) {
        return Math.max(low, Math.min(c, low + span));
      }).sort(function (a, b) { return a - b; });
      return all.filter(function (c, i) { return i === 0 || c !== all[i - 1]; });
    }
    var lefts = width ? corners(0, p.full.x, Math.max(0, p.full.w - width)) : [p.x];
    var tops = corners(1, p.full.y, Math.max(0, p.full.h - height));
    var best = { x: lefts[0], y: tops[0], count: -1 };
    tops.forEach(function (top) {
      lefts.forEach(function (left) {
        var count = 0;
        for (var i = 0; i < spans.length; i++) {
          var sp = spans[i];
          if (sp[1] >= top && sp[3] <= top + height && (!width || (sp[0] >= left && sp[2] <= left + width))) count++;
        }
        if (count > best.count) best = { x: left, y: top, count: count };
      });
    });
    return best;
  }

  var drag = null;
  viewport.addEventListener("pointerdown", function (e) {
    if (e.button !== 0) return;
    drag = { x: e.clientX, y: e.clientY, moved: false };
  });
  viewport.addEventListener("pointermove", function (e) {
    var p = pages[current];
    if (!drag || !p || !p.full) return;
    var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    if (!drag.moved) { viewport.setPointerCapture(e.pointerId); viewport.classList.add("dragging"); }
    drag.moved = true;
    p.x -= dx / p.k;
    p.y -= dy / p.k;
    drag.x = e.clientX;
    drag.y = e.clientY;
    apply(p);
  });
  function endDrag(e) {
    if (drag && drag.moved) { viewport.classList.remove("dragging"); drag.swallow = true; }
    if (drag && !drag.moved) drag = null;
    if (e && viewport.hasPointerCapture && viewport.hasPointerCapture(e.pointerId)) viewport.releasePointerCapture(e.pointerId);
  }
  viewport.addEventListener("pointerup", endDrag);
  viewport.addEventListener("pointercancel", endDrag);
  // the wheel scrolls the page (Shift: sideways), as a page read at a readable size is; with Ctrl (a pinch on a
  // touchpad) or Cmd it zooms at the pointer
  viewport.addEventListener("wheel", function (e) {
    var p = pages[current];
    if (!p || !p.full) return;
    e.preventDefault();
    var lines = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? size().h : 1;
    if (e.ctrlKey || e.metaKey) {
      var r = viewport.getBoundingClientRect();
      zoomAt(p, Math.exp(-e.deltaY * lines * 0.0015), e.clientX - r.left, e.clientY - r.top);
      return;
    }
    var dx = e.deltaX, dy = e.deltaY;
    if (e.shiftKey && !dx) { dx = dy; dy = 0; }
    p.x += dx * lines / p.k;
    p.y += dy * lines / p.k;
    apply(p);
  }, { passive: false });

  // ---- pages ------------------------------------------------------------------------------------------------
  var pageSelect = byId("page-select");
  var searchPushed = false;  // typing in the search box adds one history entry, not one per key
  function showPage(index, how) {
    if (!pages[index]) return;
    var changed = index !== current;
    if (changed) {
      if (pages[current]) { pages[current].section.classList.remove("current"); drop(pages[current]); }
      current = index;
      var p = pages[index];
      p.section.classList.add("current");
      build(p);
      if (pageSelect) pageSelect.value = String(index);
      if (p.full && (!p.k || p.fitted)) fit(p);
    }
    if (how && changed && pages.length > 1) remember(how);
  }
  // How: "push" (a step Back returns from), "search" (the first page change of a search pushes, the next
  // replace), or nothing (following Back and Forward, or the address).
  function remember(how) {
    var replace = how === "search" && searchPushed;
    history[replace ? "replaceState" : "pushState"]({ page: current }, "", "#" + data.pages[current].stem);
    searchPushed = how === "search";
  }
  function pageIndex(stem) {
    return data.pages.findIndex(function (pg) { return pg.stem === stem; });
  }
  function fragment() {  // the address's fragment, or null when it is malformed (#%)
    try { return decodeURIComponent(location.hash.slice(1)); } catch (e) { return null; }
  }
  function follow(target, how) {  // an operator's box or a page, named by a link or the address
    if (target === null) return false;
    if (target in opOfEl) { select(opOfEl[target], true, how); return true; }
    var index = pageIndex(target);
    if (index >= 0) showPage(index, how);
    return index >= 0;
  }
  window.addEventListener("popstate", function () { if (!follow(fragment())) showPage(0); });
  if (pageSelect) pageSelect.addEventListener("change", function () { showPage(Number(pageSelect.value), "push"); });
  if (byId("page-up")) byId("page-up").addEventListener("click", function () {
    var parent = data.pages[current] && data.pages[current].parent;
    if (parent !== null && parent !== undefined) showPage(parent, "push");
  });

  // ---- selection: highlight the box, centre it, show its values ----------------------------------------------
  function el(tag, text, cls) {
    var node = doc.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }
  function rows(pairs, exact) {  // pairs of indices into data.strings (explore.packed)
    var table = el("table"), text = data.strings;
    pairs.forEach(function (pair) {
      var tr = table.insertRow();
      tr.appendChild(el("td", text[pair[0]]));
      var td = el("td", text[pair[1]]);
      if (exact && pair[2] !== null) { td.appendChild(doc.createTextNode(" ")); td.appendChild(el("span", "= " + text[pair[2]], "exact")); }
      tr.appendChild(td);
    });
    return table;
  }
  function fill(k) {
    var op = ops[k];
    panel.textContent = "";
    panel.dataset.k = String(k);
    panel.appendChild(el("h3", op.type, "type-name"));
    panel.appendChild(el("div", op.name, "name"));
    if (data.metric) {
      var line = el("div", null, "metric");
      if (op.fill) { var sw = el("span", null, "swatch"); sw.style.background = op.fill; line.appendChild(sw); line.appendChild(doc.createTextNode(" ")); }
      line.appendChild(doc.createTextNode(data.metric + ": "));
      line.appendChild(el("b", op.metric + (data.unit && op.num !== null ? " " + data.unit : "")));
      panel.appendChild(line);
    }
    var where = "operator " + op.id + " · " + op.el;
    if (data.pages.length > 1) where += op.pages.length ? " · " + op.pages.map(function (i) { return data.pages[i].stem; }).join(", ") : " · not drawn on a page";
    panel.appendChild(el("div", where, "hint"));
    panel.appendChild(el("h4", op.values.length ? "values (" + op.values.length + ")" : "no annotation values"));
    if (op.values.length) panel.appendChild(rows(op.values, true)).className = "values";
    if (op.sig.length) { panel.appendChild(el("h4", "inputs, outputs, attributes")); panel.appendChild(rows(op.sig, false)); }
    if (op.more && op.more.length) {  // the rest of the box's tooltip: folded inputs, what the file stores…
      panel.appendChild(el("h4", "also"));
      var list = el("ul", null, "more");
      op.more.forEach(function (i) { list.appendChild(el("li", data.strings[i])); });
      panel.appendChild(list);
    }
    var button = el("button", "show its row in the table");
    button.type = "button";
    button.addEventListener("click", function () { var r = rowOf(k, true); if (r) { r.scrollIntoView({ block: "center" }); markRow(k); } });
    panel.appendChild(button);
  }
  // nothing selected: how to use it, and the hot spots (a copy of the list under the graph)
  var hint = panel.firstElementChild, hotList = doc.querySelector("ol.hot");
  function home() {
    panel.textContent = "";
    delete panel.dataset.k;
    panel.appendChild(hint);
    if (hotList) {
      panel.appendChild(el("h4", "hot spots by " + data.metric));
      var copy = hotList.cloneNode(true);
      copy.className = "hot side";
      panel.appendChild(copy);
    }
  }
  home();
  function markRow(k) {
    if (litRow) litRow.classList.remove("hit");
    litRow = rowOf(k);
    if (litRow) litRow.classList.add("hit");
  }
  function boxOf(k, how) {
    var op = ops[k], page = op.pages.indexOf(current) >= 0 ? current : op.pages[0];
    if (page === undefined) return null;
    showPage(page, how);
    return (pages[page].boxes && pages[page].boxes[op.el]) || null;
  }
  function select(k, centre, how) {
    pinned = k;
    fill(k);
    markRow(k);
    if (lit) lit.classList.remove("hit");
    lit = boxOf(k, how);
    if (!lit) return;
    lit.classList.add("hit");
    if (centre) centreOn(lit);
  }
  function centreOn(g) {
    var p = pages[current], s = size();
    if (!p.full) return;
    var r = g.getBoundingClientRect(), v = p.svg.getBoundingClientRect();
    var ux = p.x + (r.left + r.width / 2 - v.left) / p.k, uy = p.y + (r.top + r.height / 2 - v.top) / p.k;
    var bw = r.width / p.k, bh = r.height / p.k;
    var k = Math.min(Math.max(p.k, 1.2), 8, s.w * 0.6 / bw, s.h * 0.6 / bh);
    p.k = k;
    p.x = ux - s.w / (2 * k);
    p.y = uy - s.h / (2 * k);
    apply(p);
    var vr = viewport.getBoundingClientRect();
    if (vr.top < 0 || vr.bottom > window.innerHeight) viewport.scrollIntoView({ block: "nearest" });
  }
  function boxUnder(target) {
    var g = target.closest ? target.closest("g.node") : null;
    return g && g.id in opOfEl ? opOfEl[g.id] : -1;
  }
  viewport.addEventListener("mouseover", function (e) {
    var k = boxUnder(e.target);
    if (k >= 0 && !drag) fill(k);
  });
  viewport.addEventListener("mouseleave", function () {
    if (pinned >= 0) fill(pinned); else home();
  });
  viewport.addEventListener("click", function (e) {
    if (drag && drag.swallow) { drag = null; e.preventDefault(); return; }
    drag = null;
    var a = e.target.closest ? e.target.closest("a") : null;
    var href = a ? a.getAttribute("href") || a.getAttributeNS("http://www.w3.org/1999/xlink", "href") : null;
    if (href && href.charAt(0) === "#") {  // a link between book pages, or to a box on another page
      e.preventDefault();
      follow(href.slice(1), "push");
      return;
    }
    var k = boxUnder(e.target);
    if (k >= 0) select(k, false);
  });

  // ---- search -----------------------------------------------------------------------------------------------
  var search = byId("search"), status = byId("find-status"), found = [], at = 0;
  function matches(query) {
    var q = query.trim(), lower = q.toLowerCase(), tiers = [[], [], [], [], []];
    if (!q) return [];
    var id = /^\d+$/.test(q) ? "0:" + q : /^\d+:\d+$/.test(q) ? q : null;
    ops.forEach(function (op, k) {
      var name = op.name.toLowerCase(), type = op.type.toLowerCase();
      if (op.id === id || op.el === q) tiers[0].push(k);
      else if (name === lower) tiers[1].push(k);
      else if (type === lower) tiers[2].push(k);
      else if (name.indexOf(lower) >= 0) tiers[3].push(k);
      else if (type.indexOf(lower) >= 0) tiers[4].push(k);
    });
    return [].concat.apply([], tiers);
  }
  function go(step, how) {
    if (!found.length) { status.textContent = search.value.trim() ? "no match" : ""; return; }
    at = (at + step + found.length) % found.length;
    status.textContent = (at + 1) + " of " + found.length;
    select(found[at], true, how);
  }
  search.addEventListener("focus", function () { searchPushed = false; });
  search.addEventListener("input", function () { found = matches(search.value); at = 0; go(0, "search"); });
  search.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { e.preventDefault(); go(e.shiftKey ? -1 : 1, "push"); }
    if (e.key === "Escape") { search.value = ""; found = []; go(0); search.blur(); }
  });
  byId("find-next").addEventListener("click", function () { go(1, "push"); });
  byId("find-prev").addEventListener("click", function () { go(-1, "push"); });
  byId("zoom-in").addEventListener("click", function () { zoomCentre(1.4); });
  byId("zoom-out").addEventListener("click", function () { zoomCentre(1 / 1.4); });
  byId("zoom-fit").addEventListener("click", function () { if (pages[current].full) fit(pages[current]); });
  byId("zoom-read").addEventListener("click", function () { if (pages[current].full) readable(pages[current]); });
  byId("zoom-reset").addEventListener("click", function () { if (pages[current].full) actual(pages[current], false); });
  doc.addEventListener("keydown", function (e) {
    var t = e.target.tagName;
    if (t === "INPUT" || t === "SELECT" || t === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) return;
    var keys = { "/": function () { search.focus(); }, "+": function () { zoomCentre(1.4); },
                 "=": function () { zoomCentre(1.4); }, "-": function () { zoomCentre(1 / 1.4); },
                 "0": function () { byId("zoom-fit").click(); }, "1": function () { byId("zoom-reset").click(); },
                 "r": function () { byId("zoom-read").click(); } };
    if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
  });
  window.addEventListener("resize", function () {
    sizeViewport();
    var p = pages[current];
    if (p && p.full && p.k) { if (p.fitted) fit(p); else apply(p); }
  });

  // ---- the operator table: sort by a header, filter, rows to boxes -------------------------------------------
  // The file holds every row (read without script); the script keeps them aside and shows the first ROWS of
  // the sorted, filtered order, with "more" to extend: sorting thousands of rows in the page takes seconds.
  var table = byId("ops"), tbody = table.tBodies[0], heads = table.tHead.rows[0].cells, ROWS = 200;
  var all = Array.prototype.slice.call(tbody.rows), texts = null, order = all.map(function (row, i) { return i; });
  var shown = order, limit = ROWS, more = byId("rows-more"), every = byId("rows-all"), rowsStatus = byId("rows-status");
  function showRows() {
    var rows = doc.createDocumentFragment();
    shown.slice(0, limit).forEach(function (i) { rows.appendChild(all[i]); });
    tbody.textContent = "";
    tbody.appendChild(rows);
    var rest = shown.length - Math.min(limit, shown.length);
    more.hidden = every.hidden = rest <= 0;
    more.textContent = "show " + Math.min(rest, ROWS) + " more";
    every.textContent = "show all " + shown.length;
    rowsStatus.textContent = rest > 0 ? "rows 1–" + limit + " of " + shown.length : "";
  }
  more.addEventListener("click", function () { limit += ROWS; showRows(); });
  every.addEventListener("click", function () { limit = shown.length; showRows(); });
  // Sorting reads the report's data, never the cells: per column a key for each row (ties keep the rows'
  // order in the file), compared as numbers, or as text in natural order.
  var collator = new Intl.Collator(undefined, { numeric: true }), keys = [];
  function keyOf(col) {
    if (keys[col]) return keys[col];
    var column = heads[col] ? heads[col].dataset.col : "";
    keys[col] = all.map(function (row) {
      var op = ops[Number(row.dataset.k)], id = op.id.split(":");
      if (column === "0") return Number(id[0]) * 1e6 + Number(id[1]);
      if (column === "1") return op.type;
      if (column === "2") return op.name;
      if (column === "3") return op.num;
      return row.cells[col] ? row.cells[col].textContent : "";  // the values preview, read once
    });
    return keys[col];
  }
  function sortBy(col, dir) {
    var key = keyOf(col), numeric = key.some(function (v) { return typeof v === "number"; });
    order = order.slice().sort(function (a, b) {
      var x = key[a], y = key[b], c;
      if (x === null || y === null) c = x === y ? 0 : x === null ? 1 : -1;  // n/a last either way
      else c = dir * (numeric ? x - y : collator.compare(x, y));
      return c || a - b;
    });
    Array.prototype.forEach.call(heads, function (th, i) {
      if (i === col) th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending"); else th.removeAttribute("aria-sort");
    });
    applyFilter();
  }
  Array.prototype.forEach.call(heads, function (th, col) {
    th.title = "sort";
    th.addEventListener("click", function () { sortBy(col, th.getAttribute("aria-sort") === "ascending" ? -1 : 1); });
  });
  if (data.metric && heads.length > 4) heads[3].setAttribute("aria-sort", "descending");
  var filter = byId("filter"), filterStatus = byId("filter-status");
  function applyFilter() {
    var terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    if (terms.length && !texts) texts = all.map(function (row) { return row.textContent.toLowerCase(); });
    shown = !terms.length ? order : order.filter(function (i) {
      return terms.every(function (t) { return texts[i].indexOf(t) >= 0; });
    });
    showRows();
    filterStatus.textContent = terms.length ? shown.length + " of " + all.length + " rows" : "";
  }
  filter.addEventListener("input", function () { limit = ROWS; applyFilter(); });
  function rowOf(k, extend) {  // the row of operator k if shown (with extend: shown if the filter lets it through)
    var at = shown.findIndex(function (i) { return all[i].dataset.k === String(k); });
    if (at < 0 || (at >= limit && !extend)) return null;
    if (at >= limit) { limit = (Math.floor(at / ROWS) + 1) * ROWS; showRows(); }
    return all[shown[at]];
  }
  function jump(e) {
    var a = e.target.closest("[data-k]");
    if (!a || (e.target.closest("a") === null && a.tagName !== "TR")) return;
    e.preventDefault();
    select(Number(a.dataset.k), true, "push");
  }
  tbody.addEventListener("click", jump);
  showRows();
  if (hotList) hotList.addEventListener("click", jump);
  panel.addEventListener("click", function (e) { if (e.target.closest("ol.hot")) jump(e); });

  // ---- start: the page (or operator) the address names, else the first page --------------------------------
  sizeViewport();
  follow(fragment());
  if (current < 0) showPage(0);
})();
