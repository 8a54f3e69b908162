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
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.querySelector(".dl-book-search");
    var list = document.querySelector(".dl-book-hits");
    if (!box || !list) { return; }
    box.addEventListener("input", function () { show(list, box.value); });
    var q = new URLSearchParams(window.location.search).get("q");
    if (q) { box.value = q; show(list, q); }
  });
})();
