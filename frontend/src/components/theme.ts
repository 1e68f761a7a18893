import { useState } from "react";

export type ThemeChoice = "system" | "light" | "dark";

const KEY = "locus.theme";
const ORDER: ThemeChoice[] = ["system", "light", "dark"];

export function storedTheme(): ThemeChoice {
  const value = localStorage.getItem(KEY);
  return value === "light" || value === "dark" ? value : "system";
}

/** "system" follows prefers-color-scheme (in CSS); the others pin a scheme via data-theme. */
export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === "system") {
    root.removeAttribute("data-theme");
    localStorage.removeItem(KEY);
  } else {
    root.dataset.theme = choice;
    localStorage.setItem(KEY, choice);
  }
}

export function useTheme(): [ThemeChoice, () => void] {
  const [choice, setChoice] = useState<ThemeChoice>(storedTheme);
  const cycle = () => {
    const next = ORDER[(ORDER.indexOf(choice) + 1) % ORDER.length] ?? "system";
    applyTheme(next);
    setChoice(next);
  };
  return [choice, cycle];
}
