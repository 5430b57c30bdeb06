# R's survival package on the records `titan predict survival --records` writes: the reference
# titan's estimators are compared with (predict_r_test) and timed against (bench/predict_bench.sh).
#   Rscript r_reference.R RECORDS.csv OUT.txt KEY...
# OUT.txt: one line per quantity, "name v1 v2 ...", numbers with 17 significant digits; and
# "seconds_survfit", "seconds_coxph", "seconds_aj": time inside R (start-up and reading excluded).
suppressMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], colClasses = "character")
keys <- if (length(args) > 2) args[3:length(args)] else character(0)
d$start <- as.numeric(d$start_days)
d$stop <- as.numeric(d$stop_days)
d$event <- as.integer(d$event)
out <- file(args[2], "w")
put <- function(name, v) writeLines(paste(name, paste(formatC(v, digits = 17, format = "g"), collapse = " ")), out)

t0 <- proc.time()[["elapsed"]]
# timefix = FALSE: R by default merges times within sqrt(.Machine$double.eps) relative of each
# other (aeqSurv); at an age of 1,000 days that merges events one second apart, which titan keeps
# apart. Everything else is R's default.
km <- survfit(Surv(start, stop, event) ~ 1, data = d, timefix = FALSE)
t1 <- proc.time()[["elapsed"]]
s <- summary(km, censored = FALSE)
put("km_time", s$time); put("km_n_risk", s$n.risk); put("km_surv", s$surv)
put("km_std_err", s$std.err / s$surv); put("km_lower", s$lower); put("km_upper", s$upper)
put("seconds_survfit", t1 - t0)

if (length(keys) > 0) {
  f <- as.formula(paste("Surv(start, stop, event) ~", paste(keys, collapse = " + ")))
  t0 <- proc.time()[["elapsed"]]
  m <- coxph(f, data = d, ties = "efron", cluster = cluster, timefix = FALSE)
  t1 <- proc.time()[["elapsed"]]
  writeLines(paste("cox_terms", paste(names(coef(m)), collapse = " ")), out)
  put("cox_coef", coef(m)); put("cox_se", sqrt(diag(m$naive.var))); put("cox_robust_se", sqrt(diag(m$var)))
  put("cox_loglik", m$loglik)
  put("seconds_coxph", t1 - t0)
}

causes <- setdiff(unique(d$cause), "censored")
if (length(causes) > 1) {
  d$state <- factor(d$cause, levels = c("censored", sort(causes)))
  d$row <- seq_len(nrow(d))  # each record its own id: records of one component never overlap
  t0 <- proc.time()[["elapsed"]]
  aj <- survfit(Surv(start, stop, state) ~ 1, data = d, id = row, timefix = FALSE)
  t1 <- proc.time()[["elapsed"]]
  put("aj_time", aj$time)
  for (k in seq_along(sort(causes))) put(paste0("aj_", sort(causes)[k]), aj$pstate[, k + 1])
  put("seconds_aj", t1 - t0)
}
close(out)
