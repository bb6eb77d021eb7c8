// Every command the extension contributes (package.json's contributes.commands).
export const COMMAND_IDS = {
  startRun: 'thetaevolve.startRun',
  stopRun: 'thetaevolve.stopRun',
  pauseRun: 'thetaevolve.pauseRun',
  resumeRun: 'thetaevolve.resumeRun',
  openDashboard: 'thetaevolve.openDashboard',
  showBestDiff: 'thetaevolve.showBestDiff',
  applyProgram: 'thetaevolve.applyProgram',
  setApiKey: 'thetaevolve.setApiKey',
  selectTask: 'thetaevolve.selectTask',
  toggleTrainer: 'thetaevolve.toggleTrainer',
  newTaskForFile: 'thetaevolve.newTaskForFile',
  markEvolveBlock: 'thetaevolve.markEvolveBlock',
  openEvaluationOutput: 'thetaevolve.openEvaluationOutput',
  addFileToRun: 'thetaevolve.addFileToRun',
  editGuidance: 'thetaevolve.editGuidance',
  compareRuns: 'thetaevolve.compareRuns',
  // The Runs view's items (hidden from the palette).
  showProgramDiff: 'thetaevolve.showProgramDiff',
  compareProgramWithFile: 'thetaevolve.compareProgramWithFile',
  applyProgramToFile: 'thetaevolve.applyProgramToFile',
  openProgram: 'thetaevolve.openProgram',
  refreshRuns: 'thetaevolve.refreshRuns',
  deleteRun: 'thetaevolve.deleteRun',
  banProgram: 'thetaevolve.banProgram',
  unbanProgram: 'thetaevolve.unbanProgram',
  pinProgram: 'thetaevolve.pinProgram',
  showLineage: 'thetaevolve.showLineage',
  // A program document's feedback CodeLens (hidden from the palette).
  showProgramFeedback: 'thetaevolve.showProgramFeedback',
  // A blame annotation's hover link (hidden from the palette).
  showBlameDiff: 'thetaevolve.showBlameDiff',
} as const;
