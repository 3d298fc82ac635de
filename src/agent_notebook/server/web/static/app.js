// agent-notebook web pages: a little script, and every page works without it.
// It adds keyboard shortcuts, drag-and-drop for search by example and more search results
// in place.
"use strict";
(function () {
  // Shortcuts: "/" focuses the search box (or opens Search), letters follow the nav's
  // data-key. Never while typing in a field.
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
    var box = document.querySelector('input[type="search"]');
    if (event.key === "/" && box) {
      event.preventDefault();
      box.focus();
      return;
    }
    var link = document.querySelector('nav a[data-key="' + CSS.escape(event.key) + '"]');
    if (link) {
      event.preventDefault();
      window.location.assign(link.href);
    }
  });

  // A navigation that scrolls sideways (a phone's) shows the page's own link.
  var nav = document.querySelector("header.top nav");
  var here = nav && nav.querySelector('a[aria-current="page"]');
  if (here) {
    var over = here.getBoundingClientRect().right - nav.getBoundingClientRect().right;
    if (over > 0) nav.scrollLeft += over;
  }

  // Copy buttons: data-copy names the element whose text goes to the clipboard.
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.querySelector(button.getAttribute("data-copy"));
      if (!source || !navigator.clipboard) return;
      navigator.clipboard.writeText(source.textContent.trim()).then(function () {
        var note = button.parentNode.querySelector("[data-copied]");
        if (note) note.hidden = false;
      });
    });
  });

  // "More results": the next page's hits fetched and put under these (the link alone is
  // that page of its own); focus goes to the first new hit.
  document.querySelectorAll("a[data-more]").forEach(function (link) {
    var label = link.textContent;
    link.addEventListener("click", function (event) {
      var list = document.querySelector("ol.hits");
      if (!list || !window.fetch || !window.DOMParser) return;
      event.preventDefault();
      if (link.getAttribute("aria-disabled") === "true") return;
      link.setAttribute("aria-disabled", "true");
      link.textContent = "Loading…";
      fetch(link.href, { credentials: "same-origin" })
        .then(function (answer) {
          if (!answer.ok) throw new Error(answer.status);
          return answer.text();
        })
        .then(function (html) {
          var next = new DOMParser().parseFromString(html, "text/html");
          var hits = next.querySelectorAll("ol.hits > li");
          var first = null;
          hits.forEach(function (hit) {
            var mine = document.importNode(hit, true);
            list.appendChild(mine);
            first = first || mine;
          });
          var heading = document.getElementById("results");
          var count = list.querySelectorAll(":scope > li").length;
          if (heading) heading.textContent = "Results 1 to " + count;
          var further = next.querySelector("a[data-more]");
          if (further) {
            link.setAttribute("href", further.getAttribute("href"));
            link.textContent = label;
            link.removeAttribute("aria-disabled");
          } else {
            link.remove();
          }
          var target = first && first.querySelector("a");
          if (target) target.focus();
        })
        .catch(function () { window.location.assign(link.href); });
    });
  });

  // Search by example: a file dropped on the zone is put in its file input and sent.
  document.querySelectorAll("[data-drop]").forEach(function (zone) {
    var input = zone.querySelector('input[type="file"]');
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) {
        event.preventDefault();
        zone.classList.add("over");
      });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function () { zone.classList.remove("over"); });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      if (!event.dataTransfer || !event.dataTransfer.files.length) return;
      input.files = event.dataTransfer.files;
      zone.requestSubmit();
    });
  });
})();
