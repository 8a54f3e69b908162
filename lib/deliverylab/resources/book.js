// The course book's search: every section's text is in search-index.js
// (window.DL_BOOK_INDEX), so it works from a folder, offline, with no server.
(function () {
  "use strict";
  function escapeHtml(s) {
    return s.replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }
  function snippet(text, term) {
    var at = text.toLowerCase().indexOf(term);
    var start = Math.max(0, at - 60);
    var part = text.slice(start, start + 180);
    var safe = escapeHtml(part);
    var re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "ig");
    return (start > 0 ? "..." : "") + safe.replace(re, function (m) {
      return "<mark>" + m + "</mark>";
    }) + "...";
  }
  function search(query) {
    var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!terms.length) { return []; }
    var hits = [];
    (window.DL_BOOK_INDEX || []).forEach(function (e) {
      var hay = (e.heading + " " + e.text).toLowerCase();
      if (terms.every(function (t) { return hay.indexOf(t) >= 0; })) {
        var score = terms.reduce(function (n, t) {
          return n + (e.heading.toLowerCase().indexOf(t) >= 0 ? 10 : 0);
        }, 0);
        hits.push({entry: e, score: score});
      }
    });
    hits.sort(function (a, b) { return b.score - a.score; });
    return hits.slice(0, 25).map(function (h) { return h.entry; });
  }
  function show(list, query) {
    var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    var hits = search(query);
    list.innerHTML = "";
    if (terms.length && !hits.length) {
      list.innerHTML = "<li>No section mentions that.</li>";
      return;
    }
    hits.forEach(function (e) {
      var li = document.createElement("li");
      var href = e.page + (e.anchor ? "#" + encodeURIComponent(e.anchor) : "");
      li.className = "dl-book-hit";
      li.innerHTML = "<a href='" + href + "'>" + escapeHtml(e.chapter) +
        (e.heading && e.heading !== e.chapter ? " &middot; " + escapeHtml(e.heading) : "") +
        "</a><span class='dl-book-snippet'>" + snippet(e.text || e.heading, terms[0]) +
        "</span>";
      list.appendChild(li);
    });
  }

  // Optional parts: a markdown cell tagged "optional" starts one (JupyterLab shows it
  // collapsed too: jp-MarkdownHeadingCollapsed). It runs to the next heading of its
  // level or above; the book folds it behind one button, and opens it when a link (the
  // sidebar, a search hit) leads inside. Without script everything stays visible.
  function headingLevel(cell) {
    var h = cell.querySelector("h1, h2, h3, h4, h5, h6");
    return h ? Number(h.tagName.charAt(1)) : 0;
  }
  function foldOptional() {
    var parts = [];
    document.querySelectorAll(".celltag_optional").forEach(function (tagged) {
      var head = tagged.closest(".jp-Cell") || tagged;
      var heading = head.querySelector("h1, h2, h3, h4, h5, h6");
      if (!heading) { return; }
      var level = headingLevel(head);
      var hidden = [];
      for (var el = heading.nextElementSibling; el; el = el.nextElementSibling) {
        hidden.push(el);
      }
      for (var c = head.nextElementSibling; c; c = c.nextElementSibling) {
        var l = headingLevel(c);
        if (l && l <= level) { break; }
        hidden.push(c);
      }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "dl-book-optional-toggle";
      var part = {button: button, hidden: hidden};
      function set(open) {
        hidden.forEach(function (el) { el.hidden = !open; });
        button.setAttribute("aria-expanded", open ? "true" : "false");
        button.textContent = open ? "Hide this optional part"
          : "Show this optional part (" + hidden.length + " block" +
            (hidden.length === 1 ? "" : "s") + ")";
      }
      part.set = set;
      button.addEventListener("click", function () {
        set(button.getAttribute("aria-expanded") !== "true");
      });
      heading.insertAdjacentElement("afterend", button);
      set(false);
      parts.push(part);
    });
    function openTarget() {
      if (!window.location.hash) { return; }
      var target = document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
      if (!target) { return; }
      parts.forEach(function (part) {
        if (part.hidden.some(function (el) { return el.contains(target); })) {
          part.set(true);
          target.scrollIntoView();
        }
      });
    }
    window.addEventListener("hashchange", openTarget);
    openTarget();
  }
  document.addEventListener("DOMContentLoaded", function () {
    foldOptional();
    var box = document.querySelector(".dl-book-search");
    var list = document.querySelector(".dl-book-hits");
    if (!box || !list) { return; }
    box.addEventListener("input", function () { show(list, box.value); });
    var q = new URLSearchParams(window.location.search).get("q");
    if (q) { box.value = q; show(list, q); }
  });
})();
