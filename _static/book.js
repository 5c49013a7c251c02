// A folded code cell's toggle reads "Show code cell source"; the theme's aria-label,
// "Toggle hidden content", hides that text from screen readers (WCAG 2.5.3, label in name).
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("details.above-input > summary[aria-label]")
    .forEach((summary) => summary.removeAttribute("aria-label"));
});
