// agent-notebook web pages: a little script, and every page works without it.
// It adds keyboard shortcuts and drag-and-drop for search by example.
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
