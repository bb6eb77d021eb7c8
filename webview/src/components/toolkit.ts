// The one module that imports @vscode/webview-ui-toolkit (deprecated upstream):
// the rest of the page builds controls through these factories, so replacing
// the toolkit means replacing this file.
import { provideVSCodeDesignSystem, vsCodeButton, vsCodeCheckbox, vsCodeDivider } from '@vscode/webview-ui-toolkit';

let registered = false;

/** Register the custom elements once, before any is created. */
export function registerComponents(): void {
  if (registered) return;
  registered = true;
  // Not vsCodeTag / vsCodeBadge: their template binds an inline style
  // attribute, which the page's CSP (no 'unsafe-inline') refuses.
  provideVSCodeDesignSystem().register(vsCodeButton(), vsCodeCheckbox(), vsCodeDivider());
}

export interface ButtonControl {
  readonly element: HTMLElement;
  setDisabled(disabled: boolean): void;
  setVisible(visible: boolean): void;
}

export function createButton(
  label: string,
  options: { appearance?: 'primary' | 'secondary'; title?: string; onClick: () => void },
): ButtonControl {
  const element = document.createElement('vscode-button');
  element.textContent = label;
  element.setAttribute('appearance', options.appearance ?? 'secondary');
  if (options.title) element.title = options.title;
  element.addEventListener('click', () => {
    if (!element.hasAttribute('disabled')) options.onClick();
  });
  return {
    element,
    setDisabled: (disabled) => {
      element.toggleAttribute('disabled', disabled);
      element.setAttribute('aria-disabled', String(disabled));
    },
    setVisible: (visible) => {
      element.hidden = !visible;
    },
  };
}

export interface CheckboxControl {
  readonly element: HTMLElement;
  /** Set from the host: does not fire onChange. */
  setChecked(checked: boolean): void;
  setDisabled(disabled: boolean): void;
}

interface CheckedElement extends HTMLElement {
  checked: boolean;
}

export function createCheckbox(label: string, onChange: (checked: boolean) => void): CheckboxControl {
  const element = document.createElement('vscode-checkbox') as CheckedElement;
  element.textContent = label;
  let quiet = false;
  element.addEventListener('change', () => {
    if (!quiet) onChange(element.checked);
  });
  return {
    element,
    setChecked: (checked) => {
      if (element.checked === checked) return;
      quiet = true;
      element.checked = checked;
      // The toolkit's change event is dispatched synchronously from the setter.
      quiet = false;
    },
    setDisabled: (disabled) => element.toggleAttribute('disabled', disabled),
  };
}

export interface TextControl {
  readonly element: HTMLElement;
  setText(text: string): void;
}

/** A small uppercase label ("RUNNING", "NO MODEL"), styled like the toolkit's tag (class `tag` in dashboard.css). */
export function createTag(text = ''): TextControl {
  const element = document.createElement('span');
  element.className = 'tag';
  element.textContent = text;
  return { element, setText: (t) => (element.textContent = t) };
}

export function createDivider(): HTMLElement {
  return document.createElement('vscode-divider');
}
