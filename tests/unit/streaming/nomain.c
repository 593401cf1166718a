/* A shared object that is not a job: no spate_job_main. */
int not_a_job(void);
int
not_a_job(void)
{
    return 42;
}
