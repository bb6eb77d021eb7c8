// The dashboard page (browser bundle). Its content arrives with the dashboard issue.
document.body.dataset.thetaevolve = 'dashboard';
