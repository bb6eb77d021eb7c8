// Colours from the VS Code theme (--vscode-* variables), re-read when the
// theme changes (VS Code switches the body's vscode-light / vscode-dark /
// vscode-high-contrast class).
export interface ThemeColours {
  foreground: string;
  muted: string;
  grid: string;
  background: string;
  red: string;
  orange: string;
  yellow: string;
  green: string;
  blue: string;
  purple: string;
  highContrast: boolean;
}

function cssVar(name: string, fallback: string): string {
  const value = getComputedStyle(document.body).getPropertyValue(name).trim();
  return value || fallback;
}

export function readTheme(): ThemeColours {
  const highContrast =
    document.body.classList.contains('vscode-high-contrast') || document.body.classList.contains('vscode-high-contrast-light');
  const foreground = cssVar('--vscode-foreground', '#cccccc');
  return {
    foreground,
    muted: cssVar('--vscode-descriptionForeground', foreground),
    grid: highContrast
      ? withAlpha(cssVar('--vscode-contrastBorder', foreground), 0.55)
      : withAlpha(cssVar('--vscode-charts-lines', foreground), 0.25),
    background: cssVar('--vscode-editor-background', '#1e1e1e'),
    red: cssVar('--vscode-charts-red', '#f14c4c'),
    orange: cssVar('--vscode-charts-orange', '#d18616'),
    yellow: cssVar('--vscode-charts-yellow', '#cca700'),
    green: cssVar('--vscode-charts-green', '#89d185'),
    blue: cssVar('--vscode-charts-blue', '#3794ff'),
    purple: cssVar('--vscode-charts-purple', '#b180d7'),
    highContrast,
  };
}

let probe: CanvasRenderingContext2D | null = null;

/** Any CSS colour with the given alpha, as rgba(). */
export function withAlpha(colour: string, alpha: number): string {
  probe ??= document.createElement('canvas').getContext('2d');
  if (!probe) return colour;
  probe.fillStyle = '#000000';
  probe.fillStyle = colour;
  const normalised = String(probe.fillStyle);
  let r = 0;
  let g = 0;
  let b = 0;
  if (normalised.startsWith('#') && normalised.length === 7) {
    r = parseInt(normalised.slice(1, 3), 16);
    g = parseInt(normalised.slice(3, 5), 16);
    b = parseInt(normalised.slice(5, 7), 16);
  } else {
    const m = /rgba?\(([^)]+)\)/.exec(normalised);
    const parts = m?.[1]?.split(',').map((p) => parseFloat(p)) ?? [];
    [r = 0, g = 0, b = 0] = parts;
  }
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

/** Calls back when VS Code switches theme. */
export function onThemeChange(callback: () => void): void {
  new MutationObserver(() => callback()).observe(document.body, {
    attributes: true,
    attributeFilter: ['class', 'data-vscode-theme-kind', 'style'],
  });
}

/** Sequential colour scale (viridis stops), readable on light and dark backgrounds. */
const VIRIDIS: [number, number, number][] = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];

export function shadeColour(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const a = VIRIDIS[i] as [number, number, number];
  const b = VIRIDIS[i + 1] as [number, number, number];
  const c = a.map((v, k) => Math.round(v + ((b[k] as number) - v) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}
