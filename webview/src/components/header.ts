// Run header (task, source, direction), the run controls and the RL toggle
// with the trainer's state.
import type { DashboardAction, RunStateView, RunView, TrainerView } from '../../../src/protocol/dashboardMessages';
import { el } from '../dom';
import { formatCount, formatValue } from '../format';
import { type ButtonControl, type CheckboxControl, createButton, createCheckbox, createTag, type TextControl } from './toolkit';

const STATE_LABELS: Record<RunStateView['state'], string> = {
  idle: 'idle',
  starting: 'starting',
  running: 'running',
  paused: 'paused',
  stopping: 'stopping',
  finished: 'finished',
  error: 'error',
};

const TRAINER_LABELS: Record<TrainerView['state'], string> = {
  off: 'off',
  not_configured: 'not configured',
  next_run: 'on for the next run',
  connecting: 'connecting',
  ready: 'ready',
  waiting: 'waiting for trainer',
  error: 'error',
};

export class Header {
  readonly element = el('header', 'run-header');
  private readonly title = el('h1', 'run-title', 'ThetaEvolve');
  private readonly stateTag: TextControl = createTag('idle');
  private readonly runId = el('span', 'run-id');
  private readonly source = el('div', 'run-source');
  private readonly direction = el('div', 'run-direction');
  private readonly stateMessage = el('span', 'state-message');
  private readonly buttons: Record<DashboardAction, ButtonControl>;
  private readonly rl: CheckboxControl;
  private readonly trainerTag: TextControl = createTag('off');
  private readonly trainerInfo = el('span', 'trainer-info');

  constructor(onAction: (action: DashboardAction) => void, onRl: (enabled: boolean) => void) {
    this.buttons = {
      start: createButton('Start', {
        appearance: 'primary',
        title: 'Start a run (ThetaEvolve: Start Run)',
        onClick: () => onAction('start'),
      }),
      pause: createButton('Pause', { title: 'Pause after the current step', onClick: () => onAction('pause') }),
      resume: createButton('Resume', { title: 'Resume the paused run', onClick: () => onAction('resume') }),
      stop: createButton('Stop', { title: 'Stop the run (committed steps are kept)', onClick: () => onAction('stop') }),
    };
    this.rl = createCheckbox('RL: send rollouts to the trainer', onRl);
    const titleRow = el('div', 'title-row');
    titleRow.append(this.title, this.stateTag.element, this.runId);
    const controls = el('div', 'controls');
    const buttonGroup = el('div', 'button-group');
    buttonGroup.append(
      this.buttons.start.element,
      this.buttons.pause.element,
      this.buttons.resume.element,
      this.buttons.stop.element,
      this.stateMessage,
    );
    const trainer = el('div', 'trainer');
    trainer.append(this.rl.element, this.trainerTag.element, this.trainerInfo);
    controls.append(buttonGroup, trainer);
    this.element.append(titleRow, this.source, this.direction, controls);
    this.setRun(null);
  }

  setRun(run: RunView | null): void {
    this.source.replaceChildren();
    this.direction.replaceChildren();
    if (!run) {
      this.title.textContent = 'ThetaEvolve';
      this.runId.textContent = '';
      this.source.textContent = 'No run yet. Start one here or with "ThetaEvolve: Start Run".';
      return;
    }
    this.title.textContent = run.taskTitle || run.taskName;
    this.runId.textContent = `run ${run.runId}`;
    this.source.append('Responses from: ', el('strong', undefined, run.source.label));
    if (run.source.kind === 'mutate') {
      const tag = createTag('no model');
      tag.element.classList.add('warn-tag');
      tag.element.title = 'The offline mutate sampler perturbs numbers in the EVOLVE-BLOCK; no language model is involved.';
      this.source.append(' ', tag.element);
    }
    for (const d of run.details) this.source.append(el('span', 'detail', d));
    if (run.isolation) this.source.append(el('span', run.isolation.weak ? 'detail warning' : 'detail', run.isolation.text));
    if (run.scoreWarning) this.source.append(el('span', 'detail warning', `score not protected: ${run.scoreWarning}`));
    this.direction.append('Objective: ', el('strong', undefined, run.directionLabel));
    if (run.targetValue !== null) this.direction.append(' · target ', el('strong', undefined, formatValue(run.targetValue)));
  }

  setRunState(view: RunStateView): void {
    // A run that is over but can go on (stopped, or read back after a reload: no process runs it) says so, not "finished".
    this.stateTag.setText(view.state === 'finished' && view.resumable === true ? 'stopped' : STATE_LABELS[view.state]);
    this.stateTag.element.dataset.state = view.state;
    this.stateMessage.textContent = view.message;
    const s = view.state;
    const active = s === 'starting' || s === 'running';
    this.buttons.start.setDisabled(!(s === 'idle' || s === 'finished' || s === 'error'));
    this.buttons.pause.setDisabled(!active);
    // A paused run resumes in place; a run that is over (stopped, or read back after a reload) goes on from its last committed step.
    const resumable = s === 'paused' || ((s === 'finished' || s === 'error') && view.resumable === true);
    this.buttons.resume.setDisabled(!resumable);
    this.buttons.resume.setVisible(resumable);
    this.buttons.pause.setVisible(!resumable);
    this.buttons.stop.setDisabled(!(active || s === 'paused'));
  }

  setTrainer(view: TrainerView): void {
    this.rl.setChecked(view.enabled);
    this.rl.setDisabled(view.state === 'not_configured');
    this.trainerTag.setText(TRAINER_LABELS[view.state]);
    this.trainerTag.element.dataset.state = view.state;
    const parts: string[] = [];
    if (view.protocol) parts.push(`${view.protocol}${view.url ? ` at ${view.url}` : ''}`);
    else if (view.state === 'not_configured') parts.push('set thetaevolve.trainer.url');
    if (view.enabled || view.lastAckPolicyVersion !== null) {
      parts.push(
        view.lastAckPolicyVersion === null ? 'no policy version acknowledged yet' : `policy ${view.lastAckPolicyVersion} acknowledged`,
      );
    }
    if (view.groupsSent > 0) parts.push(`${formatCount(view.groupsSent)} groups sent`);
    if (view.message) parts.push(view.message);
    this.trainerInfo.textContent = parts.join(' · ');
  }
}
